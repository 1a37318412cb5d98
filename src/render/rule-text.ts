// A saved rule's text as an operator reads it.

/** Rule text without our `-m comment --comment "nf:…"` part. */
export function ruleTextWithoutComment(text: string): string {
  return text.replace(/\s*-m comment --comment "(?:[^"\\]|\\.)*"/, '').trim();
}
