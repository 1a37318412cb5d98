// A saved rule's text: as an operator reads it, and edited where only its text is known.

/** Rule text without our `-m comment --comment "nf:…"` part. */
export function ruleTextWithoutComment(text: string): string {
  return text.replace(/\s*-m comment --comment "(?:[^"\\]|\\.)*"/, '').trim();
}

/** The rule with every `--match-set <from>` matching set `to` instead; undefined when it does not match on `from`. */
export function withSetRenamed(text: string, from: string, to: string): string | undefined {
  const uses = ` --match-set ${from} `;
  return `${text} `.includes(uses) ? `${text} `.replaceAll(uses, ` --match-set ${to} `).trimEnd() : undefined;
}
