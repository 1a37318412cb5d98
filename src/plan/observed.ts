// What the kernel holds of ours, read from `iptables-save -t filter` and `ipset save` text.

import {
  editSorted,
  KERNEL_CHAINS,
  recordedMemberDelta,
  type FamilyState,
  type IpFamily,
  type IpSet,
  type KernelChainName,
} from '../model/index.js';
import {
  IPSET_MAXELEM,
  parseIpsetSave,
  parseIptablesSave,
  renderChain,
  renderHook,
  targetOf,
  type RuleRecord,
  type SavedIpSet,
  type SavedRule,
} from '../render/index.js';

export interface ObservedHook {
  /** 1-based position in the kernel chain. */
  readonly position: number;
  readonly rule: RuleRecord;
}

export interface ObservedFamily {
  readonly family: IpFamily;
  /** Our chains (by prefix): their rules, each with its text as saved and its identity. */
  readonly chains: ReadonlyMap<string, readonly RuleRecord[]>;
  /** Our rules (by hash comment) inside kernel chains. */
  readonly hooks: ReadonlyMap<KernelChainName, readonly ObservedHook[]>;
  /** Built-in chain policies (`FORWARD` → `ACCEPT`), to notice someone flipping them. */
  readonly policies: ReadonlyMap<string, string>;
  /** Our ipsets (by prefix) of this family, members sorted. */
  readonly ipsets: ReadonlyMap<string, SavedIpSet>;
}

export interface Ownership {
  readonly chainPrefix: string;
  readonly ipsetPrefix: string;
}

export const ownsChain = (name: string, own: Ownership): boolean => name.startsWith(own.chainPrefix);
export const ownsIpSet = (name: string, own: Ownership): boolean => new RegExp(`^${escapeRe(own.ipsetPrefix)}[46][a-z]:`).test(name);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function observeFamily(family: IpFamily, iptablesSave: string, ipsetSave: string, own: Ownership): ObservedFamily {
  const filter = parseIptablesSave(iptablesSave).get('filter');
  const chains = new Map<string, readonly RuleRecord[]>();
  const hooks = new Map<KernelChainName, ObservedHook[]>();
  const policies = new Map<string, string>();
  for (const chain of filter?.chains.values() ?? []) {
    if ((KERNEL_CHAINS as readonly string[]).includes(chain.name)) {
      const name = chain.name as KernelChainName;
      policies.set(name, chain.policy);
      const ours = chain.rules.flatMap((rule: SavedRule, i) => (isOurs(rule, own) ? [{ position: i + 1, rule }] : []));
      if (ours.length > 0) hooks.set(name, ours);
    } else if (ownsChain(chain.name, own)) {
      chains.set(chain.name, chain.rules);
    }
  }
  const ipsets = new Map<string, SavedIpSet>();
  for (const set of parseIpsetSave(ipsetSave).values()) {
    if (set.family === family && ownsIpSet(set.name, own)) ipsets.set(set.name, { ...set, members: [...set.members].sort() });
  }
  return { family, chains, hooks, policies, ipsets };
}

/** A rule in a kernel chain is ours if it carries our hash comment and jumps to one of our chains. */
function isOurs(rule: SavedRule, own: Ownership): boolean {
  if (rule.hash === undefined) return false;
  const target = targetOf(rule.args)?.target;
  return target !== undefined && ownsChain(target, own);
}

/** What reading the kernel back will show once `desired` is applied: the tracker's "programmed" state. */
const savedSets = new WeakMap<IpSet, SavedIpSet>();

/** A set's members in `ipset save` order: the set it was patched from, edited by the same change, else sorted whole. */
function savedMembersOf(set: IpSet): string[] {
  const recorded = recordedMemberDelta(set);
  const before = recorded && savedSets.get(recorded.from);
  if (!recorded || !before || before.type !== set.type) return [...set.members].sort();
  // A fresh array, or when nothing moved the earlier one (never written to: saved members are only read).
  return editSorted(before.members, recorded.delta.removed, recorded.delta.added, byCodeUnits).members as string[];
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A set as `ipset save` will show it once programmed (cached per set object). */
export function savedOf(s: IpSet): SavedIpSet {
  let saved = savedSets.get(s);
  if (!saved)
    savedSets.set(
      s,
      (saved = s.learned
        ? {
            name: s.name,
            type: s.type,
            family: s.family,
            maxelem: s.learned.maxelem,
            timeout: s.learned.timeout,
            comment: true,
            members: [],
          }
        : { name: s.name, type: s.type, family: s.family, maxelem: IPSET_MAXELEM, members: savedMembersOf(s) }),
    );
  return saved;
}

/** Our hooks as the save will show them, per kernel chain. */
export function expectedHooks(desired: FamilyState): Map<KernelChainName, ObservedHook[]> {
  const hooks = new Map<KernelChainName, ObservedHook[]>();
  for (const hook of desired.hooks) {
    const list = hooks.get(hook.chain) ?? [];
    list.push({ position: list.length + 1, rule: renderHook(hook) });
    hooks.set(hook.chain, list);
  }
  return hooks;
}

export function expectedObserved(desired: FamilyState): ObservedFamily {
  // Cached per chain (renderChain) and set object: the compiler returns the same objects for what did not change.
  // Filled in loops: every sync that is not planned from the last one derives this from the whole state.
  const chains = new Map<string, readonly RuleRecord[]>();
  for (const c of desired.chains) chains.set(c.name, renderChain(c).rules);
  const ipsets = new Map<string, SavedIpSet>();
  for (const s of desired.ipsets) ipsets.set(s.name, savedOf(s));
  return { family: desired.family, chains, hooks: expectedHooks(desired), policies: new Map(), ipsets };
}
