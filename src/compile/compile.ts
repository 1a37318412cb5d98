// The compiler: a pure function from (cluster snapshot, node settings) to the desired dataplane state.
// No I/O, no clock, no logging; a bad object becomes a Problem and everything else still compiles.

import {
  emptyFamilyState,
  type Chain,
  type ChainName,
  type ClusterSnapshot,
  type DesiredState,
  type FamilyState,
  type IpFamily,
  type NetworkPolicy,
  type NodeSettings,
  type Pod,
  type PolicyType,
  type Problem,
  type Rule,
} from '../model/index.js';
import { familyBits, formatCidr, parseCidr } from './cidr.js';
import { familyOf, indexCluster, ipsOfFamily, type ClusterIndex } from './cluster-index.js';
import { dispatchChains } from './dispatch.js';
import { IpSetRegistry } from './ipsets.js';
import { chainNames, type ChainNames } from './names.js';
import { policyChain, type Direction } from './policy-chains.js';
import { selectorMatches } from './selectors.js';
import { forwardChain, forwardHook } from './static-chains.js';
import { validatePolicy } from './validate.js';
import { workloadChain } from './workload-chains.js';

export interface CompileResult {
  readonly desired: DesiredState;
  readonly problems: readonly Problem[];
}

interface CheckedPolicy {
  readonly policy: NetworkPolicy;
  readonly key: string;
  readonly valid: boolean;
  readonly types: readonly PolicyType[];
  /** Local pods it selects. */
  readonly targets: readonly Pod[];
}

export function compile(snapshot: ClusterSnapshot, settings: NodeSettings): CompileResult {
  const problems: Problem[] = [...podProblems(snapshot)];
  const index = indexCluster(snapshot, settings.nodeName);
  const policies = [...snapshot.policies]
    .sort((a, b) => cmp(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`))
    .map((policy) => checkPolicy(policy, index, problems));
  const names = chainNames(settings.chainPrefix);
  const v4 = compileFamily(4, policies, index, names, settings);
  const v6 = wantsFamily(6, index, settings) ? compileFamily(6, policies, index, names, settings) : emptyFamilyState(6);
  return { desired: { v4, v6 }, problems };
}

function checkPolicy(policy: NetworkPolicy, index: ClusterIndex, problems: Problem[]): CheckedPolicy {
  const found = validatePolicy(policy);
  problems.push(...found);
  const errors = found.filter((p) => p.severity === 'error');
  const local = index.localPods.filter((p) => p.namespace === policy.namespace);
  // An invalid podSelector cannot say which pods it meant; failing closed means isolating the namespace.
  const badSelector = errors.some((p) => p.field.startsWith('spec.podSelector'));
  const targets = badSelector ? local : local.filter((p) => selectorMatches(policy.podSelector, p.labels));
  // Any loading problem (wrong types, unknown values) invalidates the policy; semantic warnings do not.
  const valid = errors.length === 0 && (policy.problems?.length ?? 0) === 0;
  return { policy, key: `${policy.namespace}/${policy.name}`, valid, types: policyTypes(policy), targets };
}

// "If this field is not specified, it will default based on the existence of ingress or egress rules;
// policies that contain an egress section are assumed to affect egress, and all policies (whether or not
// they contain an ingress section) are assumed to affect ingress."
export function policyTypes(policy: NetworkPolicy): readonly PolicyType[] {
  if (policy.policyTypes && policy.policyTypes.length > 0) return policy.policyTypes;
  return policy.egress && policy.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
}

function wantsFamily(family: IpFamily, index: ClusterIndex, settings: NodeSettings): boolean {
  return (
    settings.podCidrs.some((c) => parseCidr(c).ok && (parseCidr(c) as { cidr: { family: number } }).cidr.family === family) ||
    index.localPods.some((p) => ipsOfFamily(p, family).length > 0)
  );
}

function compileFamily(
  family: IpFamily,
  policies: readonly CheckedPolicy[],
  index: ClusterIndex,
  names: ChainNames,
  settings: NodeSettings,
): FamilyState {
  const sets = new IpSetRegistry(settings.ipsetPrefix, family);
  const ctx = { index, sets, names, settings };
  const policyChainsOut: Chain[] = [];
  const workloadChainsOut: Chain[] = [];
  const fromEntries: { ip: string; target: ChainName }[] = [];
  const toEntries: { ip: string; target: ChainName }[] = [];

  // Only policies that select a local pod of this family are programmed (Felix: referenced chains only).
  const byPod = new Map<Pod, Record<Direction, ChainName[]>>();
  for (const cp of policies) {
    const targets = cp.targets.filter((p) => ipsOfFamily(p, family).length > 0);
    if (targets.length === 0) continue;
    for (const direction of ['ingress', 'egress'] as const) {
      if (!cp.types.includes(direction === 'ingress' ? 'Ingress' : 'Egress')) continue;
      const chain = policyChain({ policy: cp.policy, direction, family, valid: cp.valid, localTargets: targets }, ctx);
      policyChainsOut.push(chain);
      for (const pod of targets) {
        const entry = byPod.get(pod) ?? { ingress: [], egress: [] };
        entry[direction].push(chain.name);
        byPod.set(pod, entry);
      }
    }
  }

  for (const pod of index.localPods) {
    const ips = ipsOfFamily(pod, family);
    if (ips.length === 0) continue;
    const key = `${pod.namespace}/${pod.name}`;
    const selected = byPod.get(pod) ?? { ingress: [], egress: [] };
    const common = { podKey: key, ip: ips[0]!, hostBits: familyBits(family) };
    const tw = workloadChain({ ...common, name: names.toWorkload(key), direction: 'ingress', policyChains: selected.ingress }, settings);
    const fw = workloadChain({ ...common, name: names.fromWorkload(key), direction: 'egress', policyChains: selected.egress }, settings);
    workloadChainsOut.push(tw, fw);
    for (const ip of ips) {
      toEntries.push({ ip, target: tw.name });
      fromEntries.push({ ip, target: fw.name });
    }
  }

  const podCidrs = settings.podCidrs.flatMap((c) => {
    const parsed = parseCidr(c);
    return parsed.ok && parsed.cidr.family === family ? [formatCidr(parsed.cidr)] : [];
  });
  const endRules = (direction: 'from' | 'to'): Rule[] =>
    settings.unknownPods === 'fail-open'
      ? []
      : podCidrs.map((cidr) => ({
          match: [direction === 'from' ? { kind: 'src-net', cidr } : { kind: 'dst-net', cidr }],
          action: { kind: 'drop' },
          comment: 'unknown local pod, fail-closed',
        }));
  const dispatch = [
    ...dispatchChains({ root: names.fromDispatch, direction: 'from', family, entries: fromEntries, childName: names.fromDispatchChild, endRules: endRules('from') }),
    ...dispatchChains({ root: names.toDispatch, direction: 'to', family, entries: toEntries, childName: names.toDispatchChild, endRules: endRules('to') }),
  ];

  return {
    family,
    ipsets: sets.all(),
    chains: [forwardChain(names, settings), ...dispatch, ...workloadChainsOut, ...policyChainsOut],
    hooks: [forwardHook(names)],
  };
}

function podProblems(snapshot: ClusterSnapshot): Problem[] {
  return snapshot.pods.flatMap((pod) =>
    pod.ips
      .filter((ip) => familyOf(ip) === undefined)
      .map((ip) => ({ object: `Pod ${pod.namespace}/${pod.name}`, field: 'status.podIPs', message: `"${ip}" is not an IP address; ignored`, severity: 'warning' as const })),
  );
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
