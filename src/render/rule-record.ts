// A rule as data, the unit the planner and the drift check compare (Felix keeps each chain's rule hashes as data,
// `chainToDataplaneHashes`, and compares those): its printed arguments, the identity netfence wrote into its
// comment, and its meaning. Both sides are records: a rule read from the kernel (iptables-parse.ts) and a rule
// rendered (iptables-render.ts). The hash is read once, when the rule is parsed or rendered; the canonical form,
// dearer and needed only for a rule printed differently from how we render it, on first use and then kept.

import { canonicalRuleForm } from './rule-form.js';
import { tokenize } from './tokenize.js';

export interface RuleRecord {
  /** The rule's arguments as iptables-save prints them after `-A <chain>` (the human diff, and the fast path). */
  readonly text: string;
  /** The hash of our `nf:` comment; undefined for a rule without one (not ours). */
  readonly hash?: string | undefined;
  /** Its meaning, however it is printed (rule-form.ts); computed on first read. */
  readonly form: string;
}

/** The canonical form of a rule's text; a text that does not split into words has only itself for a meaning. */
export function formOfText(text: string): string {
  try {
    return canonicalRuleForm(tokenize(text));
  } catch {
    return `unreadable ${text}`; // an unterminated quote: never the form of a rule we rendered
  }
}

class TextRule implements RuleRecord {
  #form: string | undefined;
  constructor(
    readonly text: string,
    readonly hash: string | undefined,
  ) {}
  get form(): string {
    return (this.#form ??= formOfText(this.text));
  }
}

/** A record of a rule whose text and hash are known (rendered by us, or copied from a parsed one). */
export const ruleRecord = (text: string, hash: string | undefined): RuleRecord => new TextRule(text, hash);
