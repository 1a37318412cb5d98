// Whether a rule the kernel holds is the rule we rendered. Two checks, as docs/dataplane.md explains:
// - identity: the `nf:<hash>` in its comment. The hash covers the rule's whole rendered content and every
//   rule before it in the chain (render/iptables-render.ts ruleHashes), so a changed rule, a missing one or
//   one in another place carries another hash, and a foreign rule none;
// - content: the rule parsed back into its canonical form (render/rule-form.ts) must be the rendered one's.
//   The hash alone would leave a rule someone edited in place, comment kept, unrepaired for good.
// A saved text identical to the rendered one passes both at once: the usual case costs one string compare,
// and only a rule printed differently is parsed.

import { appendLineParts, canonicalRuleForm, HASH_PREFIX, tokenize } from '../render/index.js';

/** The hash of our comment in a tokenized rule, undefined when it has none. */
function hashOf(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] !== '--comment' || !args[i + 1]!.startsWith(HASH_PREFIX)) continue;
    const comment = args[i + 1]!;
    const space = comment.indexOf(' ');
    return comment.slice(HASH_PREFIX.length, space < 0 ? undefined : space);
  }
  return undefined;
}

const tokens = (text: string): string[] | undefined => {
  try {
    return tokenize(text);
  } catch {
    return undefined; // an unterminated quote: not a rule we wrote
  }
};

/** `observed` (as saved, after `-A <chain>`) is `rendered`: same identity and same meaning. */
export function sameRule(observed: string, rendered: string): boolean {
  if (observed === rendered) return true;
  const seen = tokens(observed);
  const want = tokens(rendered);
  if (!seen || !want) return false;
  const hash = hashOf(want);
  return hash !== undefined && hashOf(seen) === hash && canonicalRuleForm(seen) === canonicalRuleForm(want);
}

/** A chain's saved rules are exactly the rendered ones, in order. */
export function sameRules(observed: readonly string[] | undefined, rendered: readonly string[] | undefined): boolean {
  if (observed === rendered) return true;
  if (observed === undefined || rendered === undefined || observed.length !== rendered.length) return false;
  for (let i = 0; i < observed.length; i++) if (!sameRule(observed[i]!, rendered[i]!)) return false;
  return true;
}

/** Two whole `-A <chain> …` lines (as `iptables -S` prints them): same chain, then sameRule. */
export function sameRuleLine(observed: string, rendered: string): boolean {
  if (observed === rendered) return true;
  const want = appendLineParts(rendered);
  const seen = appendLineParts(observed);
  return want !== undefined && seen !== undefined && seen.chain === want.chain && sameRule(seen.rule, want.rule);
}
