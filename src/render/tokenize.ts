// One saved rule's words, split as iptables-save quotes them.

// A word: bare characters and double-quoted parts (backslash escapes inside quotes), as many as touch.
const WORD = /(?:[^ \t"]+|"(?:[^"\\]|\\[^])*")+/g;
const QUOTED = /"((?:[^"\\]|\\[^])*)"/g;
const ESCAPED = /\\([^])/g;

/**
 * Split a saved rule like a shell would for the quoting iptables-save uses (double quotes, backslash).
 * Regular expressions rather than a character loop: the one-shot commands run unoptimised (cli/main.ts),
 * where a loop over 400 KB of rules costs tens of milliseconds and these run as native code.
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  let end = 0;
  WORD.lastIndex = 0;
  for (let m = WORD.exec(text); m !== null; m = WORD.exec(text)) {
    // Only a quote that never closes is skipped by WORD: anything else between words is blank.
    if (m.index > end && text.slice(end, m.index).includes('"')) throw new Error('unterminated quote');
    const word = m[0];
    out.push(word.includes('"') ? word.replace(QUOTED, unquote) : word);
    end = WORD.lastIndex;
  }
  if (end < text.length && text.slice(end).includes('"')) throw new Error('unterminated quote');
  return out;
}

const unquote = (_quoted: string, inner: string): string => (inner.includes('\\') ? inner.replace(ESCAPED, '$1') : inner);
