// A saved rule's text as an operator reads it.

/** Rule text without our `-m comment --comment "nf:…"` part. */
export function ruleTextWithoutComment(text: string): string {
  return text.replace(/\s*-m comment --comment "(?:[^"\\]|\\.)*"/, '').trim();
}

/** An `-A <chain> <rule>` line (as `iptables -S` prints it) split into its chain and the rule after it. */
export function appendLineParts(line: string): { readonly chain: string; readonly rule: string } | undefined {
  const head = /^-A (\S+) /.exec(line);
  return head ? { chain: head[1]!, rule: line.slice(head[0].length) } : undefined;
}
