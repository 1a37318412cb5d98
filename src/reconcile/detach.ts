// A parsed kernel read that does not keep the read's texts alive. Parsing `ipset save` and
// `iptables-save` slices strings out of the tools' output, and V8 represents a slice of 13 characters or
// more as a pointer into its parent: one surviving set member or rule line keeps the whole text. The
// syncer remembers its last read between drift checks, and at 50,000 pods that held the 7 MB `ipset save`
// and the filter table's save (13 MiB of strings in the daemon's heap snapshot, scripts/bench-heap.ts).
// Copying the few thousand long strings costs a few milliseconds next to the parse itself.

import type { ObservedFamily, ObservedHook } from '../plan/index.js';
import { ruleRecord, type RuleRecord } from '../render/index.js';

/** Strings shorter than this are copied by `slice` anyway (V8's SlicedString minimum length). */
const SLICE_MIN = 13;

/** `text` in storage of its own. The concatenation is flattened into a new string that `slice` then points into. */
export const ownString = (text: string): string => (text.length < SLICE_MIN ? text : (' ' + text).slice(1));

const strings = (list: readonly string[]): string[] => list.map(ownString);

/** A rule's text and hash in storage of their own; its canonical form, when needed, is read from that copy. */
const ownRule = (rule: RuleRecord): RuleRecord =>
  ruleRecord(ownString(rule.text), rule.hash === undefined ? undefined : ownString(rule.hash));
const rules = (list: readonly RuleRecord[]): RuleRecord[] => list.map(ownRule);

function mapValues<K extends string, V, W>(map: ReadonlyMap<K, V>, f: (value: V) => W): Map<K, W> {
  const out = new Map<K, W>();
  for (const [key, value] of map) out.set(ownString(key) as K, f(value));
  return out;
}

/** The same observed state, with every string copied out of the texts it was parsed from. */
export function detachObserved(observed: ObservedFamily): ObservedFamily {
  return {
    family: observed.family,
    chains: mapValues(observed.chains, rules),
    hooks: mapValues(observed.hooks, (hooks): ObservedHook[] => hooks.map((h) => ({ position: h.position, rule: ownRule(h.rule) }))),
    policies: mapValues(observed.policies, ownString),
    ipsets: mapValues(observed.ipsets, (set) => ({
      ...set,
      name: ownString(set.name) as typeof set.name,
      type: ownString(set.type),
      members: strings(set.members),
    })),
  };
}
