// The kernel floor every data-plane benchmark compares against: netfence's own restore texts loaded
// straight with the tools, in the order the syncer runs them; and the one pod a mutation touched.

import { run } from '../../src/dataplane/exec.js';
import type { ClusterSnapshot, IpFamily, Pod } from '../../src/model/index.js';
import type { FamilyPlan } from '../../src/plan/index.js';

export type IptablesBackend = 'nft' | 'legacy';

/** `iptables-nft-restore`, `ip6tables-legacy-save`, … */
export const iptablesTool = (backend: IptablesBackend, family: IpFamily, what: 'restore' | 'save'): string =>
  `${family === 4 ? 'iptables' : 'ip6tables'}-${backend}-${what}`;

/** The floor: the same texts straight into the tools, in the order the syncer runs them. */
export async function applyWithTools(netns: string, plans: readonly FamilyPlan[], backend: IptablesBackend = 'nft'): Promise<void> {
  for (const p of plans) {
    if (p.ipsetRestore) await run('ipset', ['-exist', 'restore'], { netns, input: p.ipsetRestore });
    if (p.iptablesRestore) await run(iptablesTool(backend, p.family, 'restore'), ['--noflush'], { netns, input: p.iptablesRestore });
    if (p.ipsetAfterRules) await run('ipset', ['-exist', 'restore'], { netns, input: p.ipsetAfterRules });
  }
  for (const p of plans) if (p.ipsetDestroy) await run('ipset', ['-exist', 'restore'], { netns, input: p.ipsetDestroy });
}

/** The pod a one-pod mutation touched: added, removed or relabelled. */
export function changedPod(before: ClusterSnapshot, after: ClusterSnapshot): Pod {
  const key = (p: Pod) => `${p.namespace}/${p.name}`;
  const old = new Map(before.pods.map((p) => [key(p), p]));
  const now = new Map(after.pods.map((p) => [key(p), p]));
  const added = after.pods.filter((p) => !old.has(key(p)));
  const removed = before.pods.filter((p) => !now.has(key(p)));
  const relabelled = after.pods.filter((p) => old.has(key(p)) && old.get(key(p)) !== p);
  const all = [...added, ...removed, ...relabelled];
  if (all.length !== 1) throw new Error(`expected exactly one changed pod, found ${all.length}`);
  return all[0]!;
}
