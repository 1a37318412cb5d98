// Warning Events on unenforceable NetworkPolicies, written through client-node to the fake API server
// (which checks the fields events.k8s.io requires and answers 409 on a taken name): one per problem per
// node, not repeated while the problem lasts, counted (not duplicated) when it comes back or the daemon
// restarts.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { convert } from '../../../src/cluster/convert.js';
import { kubeEventsClient, microTime, PolicyEvents, policyEvent, problemsToReport } from '../../../src/cluster/policy-events.js';
import { clusterPolicyProblems } from '../../../src/compile/cluster-policy.js';
import { nullLogger } from '../../../src/log.js';
import type { Problem } from '../../../src/model/index.js';
import { FakeApiServer } from '../../fakes/fake-apiserver.js';
import { hostNetwork, makePod, onNode } from '../../helpers/builders.js';

const badCidr: Problem = {
  object: 'NetworkPolicy prod/db',
  field: 'spec.ingress[0].from[0].ipBlock.cidr',
  message: '"10.0.0.0/33" is not a CIDR',
  severity: 'error',
};
const badSelector: Problem = {
  object: 'NetworkPolicy prod/web',
  field: 'spec.podSelector.matchExpressions[0].operator',
  message: 'unknown operator "Has"',
  severity: 'error',
};
const podProblem: Problem = { object: 'Pod prod/x', field: 'status.podIP', message: 'not an address', severity: 'error' };
const NOW = new Date('2026-11-24T10:00:00.123Z');

describe('policyEvent', () => {
  it('a Warning on the NetworkPolicy, naming the node, the field and the consequence; a stable name per node and problem', () => {
    const e = policyEvent(badCidr, 'n1', NOW)!;
    expect(e).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace: 'prod' },
      eventTime: '2026-11-24T10:00:00.123000Z',
      reportingController: 'netfence.io/netfence',
      reportingInstance: 'netfence-n1',
      reason: 'PolicyNotEnforceable',
      type: 'Warning',
      regarding: { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', namespace: 'prod', name: 'db' },
      note: 'node n1: spec.ingress[0].from[0].ipBlock.cidr: "10.0.0.0/33" is not a CIDR; the pods it selects stay isolated in its directions and it allows nothing',
    });
    expect(e.metadata.name).toMatch(/^db\.nf[0-9a-f]{12}$/);
    expect(policyEvent(badCidr, 'n1', new Date())!.metadata.name).toBe(e.metadata.name);
    expect(policyEvent(badCidr, 'n2', NOW)!.metadata.name).not.toBe(e.metadata.name);
    expect(policyEvent(podProblem, 'n1', NOW)).toBeUndefined();
    expect(microTime(new Date('2026-01-02T03:04:05.006Z'))).toBe('2026-01-02T03:04:05.006000Z');
  });
});

// A ClusterNetworkPolicy as the API would serve it, with a `networks` CIDR the compiler cannot read: the
// rule is a Deny, so it "fail[s] closed … treat the rule as a Deny all rule", and that is reported.
const badCnp = {
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name: 'metadata-guard' },
  spec: {
    tier: 'Admin',
    priority: 5,
    subject: { namespaces: {} },
    egress: [{ name: 'no-metadata', action: 'Deny', to: [{ networks: ['169.254.169.254/33'] }] }],
  },
};
function cnpProblems(): Problem[] {
  const converted = convert('ClusterNetworkPolicy', badCnp);
  if (!converted.ok) throw new Error('the CNP did not convert');
  return clusterPolicyProblems(converted.value);
}

describe('policyEvent on a ClusterNetworkPolicy', () => {
  it('a Warning regarding the cluster-scoped CNP (no namespace), written to `default` like other cluster-scoped objects, saying it fails closed', () => {
    const [problem] = cnpProblems();
    expect(problem).toMatchObject({
      object: 'ClusterNetworkPolicy metadata-guard',
      field: 'spec.egress[0].to[0].networks[0]',
      severity: 'error',
    });
    const e = policyEvent(problem!, 'n1', NOW)!;
    expect(e).toMatchObject({
      metadata: { namespace: 'default' },
      reason: 'PolicyNotEnforceable',
      type: 'Warning',
      regarding: { apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', name: 'metadata-guard' },
    });
    expect(e.regarding).not.toHaveProperty('namespace');
    expect(e.note).toMatch(
      /^node n1: spec\.egress\[0\]\.to\[0\]\.networks\[0\]: .*169\.254\.169\.254\/33.*; fails closed: its Accept rules allow nothing/,
    );
    expect(e.metadata.name).toMatch(/^metadata-guard\.nf[0-9a-f]{12}$/);
    // Same node, field and message on a NetworkPolicy named alike in `default`: a different Event.
    const np = policyEvent({ ...problem!, object: 'NetworkPolicy default/metadata-guard' }, 'n1', NOW)!;
    expect(np.metadata.name).not.toBe(e.metadata.name);
  });
  it('a warning (not an error) reads as enforced but not as written', () => {
    const e = policyEvent({ object: 'ClusterNetworkPolicy x', field: 'spec.priority', message: 'odd', severity: 'warning' }, 'n1', NOW)!;
    expect(e.reason).toBe('PolicyWarning');
    expect(e.note).toMatch(/enforced, but not as it reads$/);
  });
});

describe('PolicyEvents against the fake API server', () => {
  let server: FakeApiServer;
  let dir: string;
  let kubeConfig: KubeConfig;
  beforeEach(async () => {
    server = new FakeApiServer();
    await server.start();
    dir = mkdtempSync(join(tmpdir(), 'nft-events-'));
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(server.writeKubeconfig(dir));
  });
  afterEach(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const recorder = (node: string) => new PolicyEvents({ client: kubeEventsClient(kubeConfig), node, now: () => NOW, logger: nullLogger });
  const posts = () => server.requests.filter((r) => r.method === 'POST').length;
  const patches = () => server.requests.filter((r) => r.method === 'PATCH').length;

  it('one Event per problem per node, written once while the problem lasts', async () => {
    const n1 = recorder('n1');
    await n1.report([badCidr, badSelector, podProblem]);
    await n1.report([badCidr, badSelector, podProblem]);
    await recorder('n2').report([badCidr]);
    const events = server.events();
    expect(events.map((e) => `${String(e['reportingInstance'])} ${(e['regarding'] as { name: string }).name}`).sort()).toEqual([
      'netfence-n1 db',
      'netfence-n1 web',
      'netfence-n2 db',
    ]);
    expect(posts()).toBe(3);
    expect(patches()).toBe(0);
  });

  it('a problem that comes back, or a restarted daemon, counts the existing Event instead of writing another', async () => {
    const n1 = recorder('n1');
    await n1.report([badCidr]);
    await n1.report([]);
    await n1.report([badCidr]);
    await recorder('n1').report([badCidr]);
    expect(server.events()).toHaveLength(1);
    expect(server.events()[0]!['series']).toEqual({ count: 2, lastObservedTime: '2026-11-24T10:00:00.123000Z' });
    expect(patches()).toBe(2);
  });

  it('an invalid ClusterNetworkPolicy gets one Event per node in `default`, once while the problem lasts, counted when it comes back', async () => {
    const problems = cnpProblems();
    const n1 = recorder('n1');
    await n1.report([...problems, badCidr]);
    await n1.report([...problems, badCidr]);
    await recorder('n2').report(problems);
    const cnpEvents = server.events().filter((e) => (e['regarding'] as { kind: string }).kind === 'ClusterNetworkPolicy');
    expect(
      cnpEvents
        .map((e) => `${e.metadata!.namespace} ${String(e['reportingInstance'])} ${(e['regarding'] as { name: string }).name}`)
        .sort(),
    ).toEqual(['default netfence-n1 metadata-guard', 'default netfence-n2 metadata-guard']);
    expect(posts()).toBe(3);
    await n1.report([badCidr]);
    await n1.report(problems);
    expect(server.events()).toHaveLength(3);
    expect(patches()).toBe(1);
  });

  it('an API error is logged, not thrown', async () => {
    await server.stop();
    const warnings: string[] = [];
    const events = new PolicyEvents({
      client: kubeEventsClient(kubeConfig),
      node: 'n1',
      now: () => NOW,
      logger: { ...nullLogger, warn: (m: string) => void warnings.push(m) },
    });
    await expect(events.report([badCidr])).resolves.toBeUndefined();
    expect(warnings).toEqual(['could not write a policy Event']);
    await server.start();
  });

  describe('a burst of reports', () => {
    const invalid = (i: number, cidr = '10.0.0.0/33'): Problem => ({
      object: `NetworkPolicy prod/p${i}`,
      field: 'spec.ingress[0].from[0].ipBlock.cidr',
      message: `"${cidr}" is not a CIDR`,
      severity: 'error',
    });
    const writes = () => server.requests.filter((r) => r.path.includes('/events') && (r.method === 'POST' || r.method === 'PATCH')).length;

    it('200 invalid policies and 50 updates to one: one write per problem change at most, one at a time, none missing', async () => {
      const others = Array.from({ length: 199 }, (_, i) => invalid(i + 1));
      let inFlight = 0;
      let maxInFlight = 0;
      const client = kubeEventsClient(kubeConfig);
      const counting =
        <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
        async (...a: A): Promise<R> => {
          maxInFlight = Math.max(maxInFlight, ++inFlight);
          try {
            return await fn(...a);
          } finally {
            inFlight--;
          }
        };
      const outcomes: string[] = [];
      const events = new PolicyEvents({
        client: { create: counting(client.create), setSeries: counting(client.setSeries) },
        node: 'n1',
        now: () => NOW,
        logger: nullLogger,
        onReports: (outcome, n) => void outcomes.push(...Array<string>(n).fill(outcome)),
      });
      // As the daemon does: every sync reports the whole list, without waiting for the last report's writes.
      const reports: Promise<void>[] = [events.report([invalid(0), ...others])];
      for (let u = 1; u <= 50; u++) {
        await new Promise((r) => setTimeout(r, 2));
        reports.push(events.report([invalid(0, `10.0.${u}.0/33`), ...others]));
      }
      await Promise.all(reports);
      // 200 problems, then 50 changes of one: 250 problem changes, so at most 250 writes.
      expect(writes()).toBeLessThanOrEqual(250);
      expect(maxInFlight).toBe(1);
      const notes = server.events().map((e) => String(e['note']));
      expect(notes.filter((n) => n.includes('10.0.50.0/33'))).toHaveLength(1); // the latest version of p0's problem
      expect(new Set(server.events().map((e) => (e['regarding'] as { name: string }).name)).size).toBe(200);
      expect(outcomes.filter((o) => o === 'coalesced').length).toBeGreaterThan(0);
    });

    it('past the cap per window, problems are dropped while they last (counted, logged once); new ones are written once the window has passed', async () => {
      let now = NOW.getTime();
      const outcomes: string[] = [];
      const warnings: string[] = [];
      const events = new PolicyEvents({
        client: kubeEventsClient(kubeConfig),
        node: 'n1',
        now: () => new Date(now),
        logger: { ...nullLogger, warn: (m: string) => void warnings.push(m) },
        cap: { maxEvents: 5, windowMs: 60_000 },
        onReports: (outcome, n) => void outcomes.push(...Array<string>(n).fill(outcome)),
      });
      const eight = Array.from({ length: 8 }, (_, i) => invalid(i));
      await events.report(eight);
      await events.report(eight);
      expect(writes()).toBe(5);
      expect(outcomes).toEqual(['dropped', 'dropped', 'dropped']);
      expect(warnings).toEqual(['policy Event cap reached: further problems are not written as Events while they last']);
      now += 60_000;
      const fresh = Array.from({ length: 3 }, (_, i) => invalid(i + 100));
      await events.report([...eight, ...fresh]);
      expect(writes()).toBe(8);
    });
  });
});

describe('problemsToReport: only what concerns this node', () => {
  // Events used to scale with nodes: every node wrote one for every invalid policy of the cluster.
  const snapshot = {
    nodes: ['n2', 'n1', 'n3'].map((name) => ({ name, podCidrs: [], addresses: [] })),
    namespaces: [],
    pods: [
      makePod('prod', 'db', '10.244.1.5', onNode('n1')),
      makePod('prod', 'web', '10.244.2.5', onNode('n2')),
      makePod('dev', 'agent', '192.168.0.3', onNode('n3'), hostNetwork),
    ],
    policies: [],
  };
  const cnpProblem = cnpProblems()[0]!;
  const devProblem: Problem = { ...badSelector, object: 'NetworkPolicy dev/web' };
  const all = [badCidr, devProblem, podProblem, cnpProblem];

  it.each([
    // n1: a pod in prod, and the first node by name: prod's problem and the CNP's.
    { node: 'n1', reported: [badCidr, cnpProblem] },
    // n2: a pod in prod, not the elected reporter.
    { node: 'n2', reported: [badCidr] },
    // n3: only a host-network pod (never selected by a policy): nothing.
    { node: 'n3', reported: [] },
  ])('$node reports $reported.length', ({ node, reported }) => {
    expect(problemsToReport(all, snapshot, node)).toEqual(reported);
  });

  it('no Node known yet: a node reports the ClusterNetworkPolicy problems itself', () => {
    expect(problemsToReport([cnpProblem], { ...snapshot, nodes: [] }, 'n9')).toEqual([cnpProblem]);
  });
});
