// Whether a rule the kernel holds is the rule we rendered. Two checks, as docs/dataplane.md explains:
// - identity: the `nf:<hash>` in its comment. The hash covers the rule's whole rendered content and every
//   rule before it in the chain (render/iptables-render.ts ruleHashes), so a changed rule, a missing one or
//   one in another place carries another hash, and a foreign rule none;
// - content: the rule's canonical form (render/rule-form.ts) must be the rendered one's. The hash alone would
//   leave a rule someone edited in place, comment kept, unrepaired for good.
// Both are read once per rule, when it is parsed or rendered (render/rule-record.ts). A saved text identical to
// the rendered one passes both at once: the usual case costs one string compare, and only a rule printed
// differently needs its canonical form.

import type { RuleRecord } from '../render/index.js';

/** `observed` (as saved) is `rendered`: same identity and same meaning. */
export function sameRule(observed: RuleRecord, rendered: RuleRecord): boolean {
  if (observed === rendered || observed.text === rendered.text) return true;
  return rendered.hash !== undefined && observed.hash === rendered.hash && observed.form === rendered.form;
}

/** A chain's saved rules are exactly the rendered ones, in order. */
export function sameRules(observed: readonly RuleRecord[] | undefined, rendered: readonly RuleRecord[] | undefined): boolean {
  if (observed === rendered) return true;
  if (observed === undefined || rendered === undefined || observed.length !== rendered.length) return false;
  for (let i = 0; i < observed.length; i++) if (!sameRule(observed[i]!, rendered[i]!)) return false;
  return true;
}
