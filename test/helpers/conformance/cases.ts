// Conformance cases as data: named steps, each a change to the cluster (policies, labels, pods)
// followed by the matrices that must then be observed. The runner applies every step to every node
// and collects every wrong matrix, so one failing case reports all of what it saw. Each expected
// matrix is also held against the spec oracle, so a misread case shows up as such.

import type { Protocol } from '../../../src/model/index.js';
import type { Matrix } from '../../../sandbox/index.js';
import type { ConformanceCluster } from './cluster.js';
import { oracleDisagreements } from './cross-check.js';
import { whyDisagreements, type ProbedCell } from '../why-cross-check.js';
import type { PolicyDoc } from './manifests.js';
import { Reachability } from './reachability.js';

export interface Check {
  readonly protocol: Protocol;
  readonly port: number;
  readonly expect: Matrix;
}

export interface Step {
  /** Shown in failure reports: what this step changed. */
  readonly title: string;
  readonly change: (cluster: ConformanceCluster) => void | Promise<void>;
  readonly checks: readonly Check[];
}

export interface ConformanceCase {
  readonly name: string;
  readonly steps: readonly Step[];
}

const check =
  (protocol: Protocol, port: number) =>
  (expect: Reachability | Matrix): Check => ({ protocol, port, expect: expect instanceof Reachability ? expect.matrix() : expect });

export const tcp80 = check('TCP', 80);
export const tcp81 = check('TCP', 81);
export const udp80 = check('UDP', 80);
export const udp81 = check('UDP', 81);
export const sctp80 = check('SCTP', 80);
export const sctp81 = check('SCTP', 81);

/** The common shape: create these policies, then expect these matrices. */
export function policyCase(name: string, policies: readonly PolicyDoc[], ...checks: readonly Check[]): ConformanceCase {
  return {
    name,
    steps: [{ title: `create ${policies.map(policyName).join(', ') || 'no policies'}`, change: (c) => c.setPolicies(policies), checks }],
  };
}

export function step(title: string, change: Step['change'], ...checks: readonly Check[]): Step {
  return { title, change, checks };
}

export const policyName = (p: PolicyDoc): string => `${p.metadata.namespace}/${p.metadata.name}`;

/** Runs one case on a cluster that is in its base state; returns one report per wrong matrix. */
export async function runCase(cluster: ConformanceCluster, kase: ConformanceCase): Promise<string[]> {
  const failures: string[] = [];
  for (const [i, s] of kase.steps.entries()) {
    await s.change(cluster);
    await cluster.apply();
    for (const c of s.checks) {
      const disagreements = oracleDisagreements(cluster.snapshot(), c, cluster.family);
      if (disagreements.length > 0)
        failures.push(
          `step ${i + 1} (${s.title}): ${c.protocol}/${c.port} expectation disagrees with the spec oracle:\n${disagreements.join('\n')}`,
        );
      const outcome = await cluster.check(c.expect, c);
      if (!outcome.ok) failures.push(`step ${i + 1} (${s.title}): ${outcome.report}`);
      // `netfence why` must give the answer the packets gave (probes by ClusterIP are left to the Service suites' own checks).
      if (!cluster.services) {
        const why = await whyDisagreements(cluster.snapshot(), probedCells(outcome.observed, c), cluster.whyOptions());
        if (why.length > 0) failures.push(`step ${i + 1} (${s.title}): ${c.protocol}/${c.port} netfence why disagrees:\n${why.join('\n')}`);
      }
    }
  }
  return failures;
}

/** Every cell the probe round observed. */
function probedCells(observed: Matrix, c: Check): ProbedCell[] {
  return observed.froms.flatMap((from) =>
    observed.tos.flatMap((to) => {
      const reachable = observed.cells[from]?.[to];
      return reachable === undefined ? [] : [{ from, to, protocol: c.protocol, port: c.port, reachable }];
    }),
  );
}
