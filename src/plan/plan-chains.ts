// Step 2 of a plan, rules: the chains whose rules differ from what the kernel holds, our hooks in the kernel's
// chains, and the chains of ours nothing wants; one `iptables-restore --noflush` transaction.

import type { Chain, ChainRole, FamilyState, Hook, KernelChainName } from '../model/index.js';
import {
  appendLines,
  declareChainLine,
  deleteChainLine,
  filterTransaction,
  renderChain,
  renderHook,
  ruleLine,
  type RuleRecord,
} from '../render/index.js';
import type { Change, ChangeAction, PlanCounts } from './change.js';
import type { ObservedFamily, ObservedHook } from './observed.js';
import { sameRule, sameRules } from './rule-identity.js';

export interface ChainsPlan {
  /** The transaction; '' when no rule changes. */
  readonly restore: string;
  readonly changes: readonly Change[];
  readonly counts: Pick<PlanCounts, 'chainsWritten' | 'rulesWritten' | 'chainsDeleted' | 'hooksWritten'>;
}

/** `known`: chains of the previous apply, programmed for sure and skipped unseen. */
export function planChains(desired: FamilyState, observed: ObservedFamily, known: ReadonlySet<object>): ChainsPlan {
  const declare: string[] = [];
  const body: string[] = [];
  const tail: string[] = [];
  const changes: Change[] = [];
  let rulesWritten = 0;
  for (const chain of desired.chains) {
    if (known.has(chain)) continue;
    const rendered = renderChain(chain);
    const after = rendered.rules;
    const before = observed.chains.get(chain.name);
    if (before && sameRules(before, after)) continue;
    declare.push(declareChainLine(chain.name));
    body.push(...appendLines(rendered));
    changes.push({
      object: 'chain',
      name: chain.name,
      action: before ? 'update' : 'create',
      before: textsOf(before ?? []),
      after: textsOf(after),
      owner: ownerOf(chain),
    });
    rulesWritten += after.length;
  }
  const chainsWritten = changes.length;
  for (const hookChain of new Set([...desired.hooks.map((h) => h.chain), ...observed.hooks.keys()])) {
    const hookLines = planHooks(
      hookChain,
      desired.hooks.filter((h) => h.chain === hookChain),
      observed.hooks.get(hookChain) ?? [],
    );
    if (!hookLines) continue;
    body.push(...hookLines.lines);
    changes.push({
      object: 'hook',
      name: hookChain,
      action: hookLines.action,
      before: hookLines.before,
      after: hookLines.after,
      owner: 'static',
    });
  }
  const hooksWritten = changes.length - chainsWritten;
  const desiredChains = new Set(desired.chains.map((c) => c.name as string));
  const stale = [...observed.chains.keys()].filter((name) => !desiredChains.has(name)).sort();
  for (const name of stale) {
    // Flush every stale chain first and delete them after: they may refer to each other.
    declare.push(declareChainLine(name));
    tail.push(deleteChainLine(name));
    changes.push({
      object: 'chain',
      name,
      action: 'delete',
      before: textsOf(observed.chains.get(name)!),
      after: [],
      owner: 'no longer needed',
    });
  }
  return {
    restore: filterTransaction([...declare, ...body, ...tail]),
    changes,
    counts: { chainsWritten, rulesWritten, chainsDeleted: stale.length, hooksWritten },
  };
}

/** Our hooks must be exactly the desired ones, inserted ones at the very top, in order. */
function planHooks(
  chain: KernelChainName,
  desired: readonly Hook[],
  observed: readonly ObservedHook[],
): { lines: string[]; action: ChangeAction; before: string[]; after: string[] } | undefined {
  const wantInserted = desired.filter((h) => h.position === 'insert').map(renderHook);
  const wantAppended = desired.filter((h) => h.position === 'append').map(renderHook);
  const before = observed.map((o) => `${o.position}: ${o.rule.text}`);
  const insertedOk = wantInserted.every((rule, i) => observed[i]?.position === i + 1 && sameRule(observed[i]!.rule, rule));
  const appendedOk = sameRules(
    observed.slice(wantInserted.length).map((o) => o.rule),
    wantAppended,
  );
  if (insertedOk && appendedOk && observed.length === desired.length) return undefined;
  const lines = [
    ...observed.map((o) => ruleLine('delete', chain, o.rule.text)),
    ...[...wantInserted].reverse().map((r) => ruleLine('insert-first', chain, r.text)),
    ...wantAppended.map((r) => ruleLine('append', chain, r.text)),
  ];
  const after = [...wantInserted.map((r, i) => `${i + 1}: ${r.text}`), ...wantAppended.map((r) => `end: ${r.text}`)];
  return { lines, action: observed.length === 0 ? 'create' : desired.length === 0 ? 'delete' : 'update', before, after };
}

const textsOf = (rules: readonly RuleRecord[]): string[] => rules.map((r) => r.text);

function ownerOf(chain: Chain): string {
  const role: ChainRole = chain.role;
  switch (role.kind) {
    case 'static':
      return 'static';
    case 'dispatch':
      return 'dispatch';
    case 'host-dispatch':
      return 'dispatch';
    case 'workload':
    case 'host-workload':
      return `pod ${role.pod}`;
    case 'policy':
      return `policy ${role.policy}`;
    case 'cluster-policy':
      return `ClusterNetworkPolicy ${role.policy}`;
  }
}
