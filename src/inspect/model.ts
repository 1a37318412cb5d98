// What the saved (or live) ruleset says netfence is doing, per local pod: dispatch rules → workload
// chains → policy chains → rules, mapped back to `namespace/name` through our rule comments. Pure: the
// parsed filter table and ipsets come in, a plain JSON-able report comes out.

import type { Match } from '../model/index.js';
import { targetOf, type SavedChain, type SavedRule } from '../render/index.js';
import { chainKind, readComment, type IpSets, type Ruleset } from '../trace/index.js';
import { clusterPolicyView, policyView, setViewer } from './policy-views.js';
import { inputHookProblems, unexpectedOwnedRules, unreferencedChains } from './problems.js';
import type { InspectOptions, InspectProblem, InspectReport, PodView, PolicyView, RuleRef, WorkloadView } from './report.js';

const SAMPLE = 3;

export function inspectRuleset(ruleset: Ruleset, ipsets: IpSets, opts: InspectOptions): InspectReport {
  const prefix = opts.chainPrefix;
  const problems: InspectProblem[] = [];
  const sets = setViewer(ipsets, opts.sampleSize ?? SAMPLE, problems);
  const chain = (name: string): SavedChain | undefined => ruleset.chains.get(name);
  const forward = chain('FORWARD');
  const hookIndex = forward?.rules.findIndex((r) => targetIsOurs(r, prefix)) ?? -1;
  if (hookIndex < 0)
    problems.push({
      kind: 'missing-hook',
      chain: 'FORWARD',
      message: `no rule in FORWARD jumps to ${prefix}FORWARD: netfence's chains are never reached`,
    });
  forward?.rules.slice(0, Math.max(0, hookIndex)).forEach((r, i) =>
    problems.push({
      kind: 'foreign-above-hook',
      chain: 'FORWARD',
      ruleIndex: i + 1,
      text: r.text,
      message: 'runs before netfence: it can accept or drop pod traffic before any policy is checked',
    }),
  );
  problems.push(...inputHookProblems(ruleset, prefix));
  problems.push(...unexpectedOwnedRules(ruleset, prefix), ...unreferencedChains(ruleset, prefix));

  const failClosed: string[] = [];
  const pods = new Map<string, { egress: RuleRef[]; ingress: RuleRef[]; egressChain?: string; ingressChain?: string }>();
  for (const [root, dir] of [
    [`${prefix}from-wl-dispatch`, 'egress'],
    [`${prefix}to-wl-dispatch`, 'ingress'],
  ] as const) {
    if (!chain(root)) {
      problems.push({ kind: 'missing-chain', chain: root, message: `${root} is missing: local pods cannot be found for ${dir}` });
      continue;
    }
    walkDispatch(
      ruleset,
      root,
      prefix,
      [],
      new Set(),
      (ip, path, target) => {
        const entry = pods.get(ip) ?? { egress: [], ingress: [] };
        entry[dir] = path;
        entry[dir === 'egress' ? 'egressChain' : 'ingressChain'] = target;
        pods.set(ip, entry);
      },
      (cidr) => failClosed.includes(cidr) || failClosed.push(cidr),
    );
  }

  // Local pods → this node (INPUT), present only while ClusterNetworkPolicies exist.
  const toNode = new Map<string, string>();
  if (chain(`${prefix}to-host-dispatch`))
    walkDispatch(
      ruleset,
      `${prefix}to-host-dispatch`,
      prefix,
      [],
      new Set(),
      (ip, _path, target) => toNode.set(ip, target),
      () => undefined,
    );

  const policyViews = new Map<string, PolicyView & { usedBy: string[] }>();
  for (const c of ruleset.chains.values()) {
    const kind = chainKind(c.name, prefix);
    if (kind === 'policy-ingress' || kind === 'policy-egress')
      policyViews.set(c.name, { ...policyView(c, kind === 'policy-ingress' ? 'ingress' : 'egress', sets), usedBy: [] });
    // ClusterNetworkPolicy chains: a workload chain jumps to them in tier order (Admin, NetworkPolicy, Baseline).
    if (kind === 'cluster-policy-ingress' || kind === 'cluster-policy-egress') {
      policyViews.set(c.name, {
        ...clusterPolicyView(c, kind === 'cluster-policy-ingress' ? 'ingress' : 'egress', sets, ipsets),
        usedBy: [],
      });
    }
  }

  const podViews: PodView[] = [];
  for (const [ip, entry] of pods) {
    const egress = entry.egressChain ? workloadView(chain(entry.egressChain), policyViews) : undefined;
    const ingress = entry.ingressChain ? workloadView(chain(entry.ingressChain), policyViews) : undefined;
    const hostChain = toNode.get(ip);
    const host = hostChain ? workloadView(chain(hostChain), policyViews) : undefined;
    const pod = podName(chain(entry.egressChain ?? '')) ?? podName(chain(entry.ingressChain ?? ''));
    for (const w of [egress, ingress, host]) for (const pc of w?.policyChains ?? []) policyViews.get(pc)?.usedBy.push(pod ?? ip);
    podViews.push({
      ...(pod !== undefined ? { pod } : {}),
      ip,
      dispatch: { egress: entry.egress, ingress: entry.ingress },
      ...(egress ? { egress } : {}),
      ...(ingress ? { ingress } : {}),
      ...(host ? { toNode: host } : {}),
    });
  }
  podViews.sort((a, b) => cmp(a.pod ?? a.ip, b.pod ?? b.ip));
  // The drops of an isolated pod belong to every policy that selects it: none of them allowed the packet.
  const denied = new Map<string, number>();
  for (const p of podViews)
    for (const w of [p.egress, p.ingress]) {
      if (w?.droppedPackets === undefined) continue;
      for (const pc of w.policyChains) denied.set(pc, (denied.get(pc) ?? 0) + w.droppedPackets);
    }
  const withDenied = [...policyViews.values()].map((p) =>
    p.allowedPackets !== undefined ? { ...p, deniedPackets: denied.get(p.chain) ?? 0 } : p,
  );
  const policies = withDenied.sort((a, b) => cmp(`${a.policy} ${a.direction}`, `${b.policy} ${b.direction}`));
  return {
    chainPrefix: prefix,
    forwardPolicy: forward?.policy ?? 'unknown',
    ...(hookIndex >= 0 ? { hookPosition: hookIndex + 1 } : {}),
    failClosedCidrs: failClosed,
    pods: podViews,
    policies: policies.map((p) => ({ ...p, usedBy: [...new Set(p.usedBy)].sort() })),
    problems,
  };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const refOf = (chain: string, i: number, r: SavedRule): RuleRef => ({ chain, ruleIndex: i + 1, text: r.text });

function targetIsOurs(r: SavedRule, prefix: string): boolean {
  const t = targetOf(r.args);
  return t !== undefined && t.target.startsWith(prefix);
}

/** Follows the dispatch tree: `-s IP/32 -g nf-fw-…` is a pod; `-s NET -g nf-fd-…` a subtree; `-s NET -j DROP` fail-closed. */
function walkDispatch(
  ruleset: Ruleset,
  name: string,
  prefix: string,
  path: readonly RuleRef[],
  seen: Set<string>,
  onPod: (ip: string, path: RuleRef[], target: string) => void,
  onFailClosed: (cidr: string) => void,
): void {
  if (seen.has(name)) return;
  seen.add(name);
  ruleset.chains.get(name)?.rules.forEach((r, i) => {
    const rule = r.rule;
    const net = rule?.match.find((m): m is Extract<Match, { kind: 'src-net' | 'dst-net' }> => m.kind === 'src-net' || m.kind === 'dst-net');
    if (!rule || !net) return;
    const here = [...path, refOf(name, i, r)];
    const action = rule.action;
    if (action.kind === 'drop' || action.kind === 'reject') onFailClosed(net.cidr);
    if (action.kind !== 'goto' && action.kind !== 'jump') return;
    const kind = chainKind(action.target, prefix);
    if (kind === 'dispatch-from' || kind === 'dispatch-to' || kind === 'dispatch-host')
      walkDispatch(ruleset, action.target, prefix, here, seen, onPod, onFailClosed);
    else if (kind === 'workload-egress' || kind === 'workload-ingress' || kind === 'workload-host')
      onPod(net.cidr.replace(/\/(32|128)$/, ''), here, action.target);
  });
}

function podName(chain: SavedChain | undefined): string | undefined {
  for (const r of chain?.rules ?? []) {
    const m = r.comment !== undefined ? readComment(r.comment) : undefined;
    if (m?.kind === 'workload') return m.pod;
  }
  return undefined;
}

function workloadView(chain: SavedChain | undefined, policies: ReadonlyMap<string, PolicyView>): WorkloadView | undefined {
  if (!chain) return undefined;
  const policyChains = chain.rules.flatMap((r) =>
    r.rule?.action.kind === 'jump' && policies.has(r.rule.action.target) ? [r.rule.action.target] : [],
  );
  const lastSaved = chain.rules.at(-1);
  const last = lastSaved?.rule;
  const isolated = last !== undefined && last.action.kind === 'drop' && last.match.length === 0;
  const dropped = isolated && lastSaved?.counters ? { droppedPackets: lastSaved.counters.packets } : {};
  return { chain: chain.name, isolated, policies: policyChains.map((c) => policies.get(c)?.policy ?? c), policyChains, ...dropped };
}

/** Keeps the pods (by `ns/name` or IP) and policies asked for; undefined filters keep everything. */
export function filterReport(report: InspectReport, filter: { readonly pod?: string; readonly policy?: string }): InspectReport {
  let pods = report.pods;
  let policies = report.policies;
  if (filter.pod !== undefined) {
    pods = pods.filter((p) => p.pod === filter.pod || p.ip === filter.pod);
    const wanted = new Set(
      pods.flatMap((p) => [...(p.egress?.policyChains ?? []), ...(p.ingress?.policyChains ?? []), ...(p.toNode?.policyChains ?? [])]),
    );
    policies = policies.filter((p) => wanted.has(p.chain));
  }
  if (filter.policy !== undefined) {
    policies = policies.filter((p) => p.policy === filter.policy);
    const chains = new Set(policies.map((p) => p.chain));
    pods = pods.filter((p) => [...(p.egress?.policyChains ?? []), ...(p.ingress?.policyChains ?? [])].some((c) => chains.has(c)));
  }
  return { ...report, pods, policies };
}
