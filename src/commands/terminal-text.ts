// Text from somewhere else (a daemon's answer, which anyone on its port could stand in for) made safe to
// print on a terminal: characters that would steer the terminal instead of being shown are shown as
// escapes. ESC and the C1 controls start sequences that move the cursor, rewrite the title, set the
// clipboard (OSC 52) or hide what follows; bidi overrides reorder what the reader sees (CVE-2021-42574);
// the other C0 controls and line separators break the layout or erase what is already printed.

/** C0 and DEL; C1; the Arabic letter mark; zero-width, LRM/RLM; line/paragraph separators, bidi embeddings and overrides; isolates; BOM. */
const isUnsafe = (code: number): boolean =>
  code <= 0x1f ||
  (code >= 0x7f && code <= 0x9f) ||
  code === 0x61c ||
  (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x2028 && code <= 0x202e) ||
  (code >= 0x2066 && code <= 0x2069) ||
  code === 0xfeff;

const hex = (code: number, width: number): string => code.toString(16).padStart(width, '0');

/** `s` with every unsafe character, and the backslash that would make an escape ambiguous, shown escaped. */
export function terminalSafe(s: string): string {
  let out = '';
  for (const c of s) {
    const code = c.codePointAt(0)!;
    out += c === '\\' ? '\\\\' : !isUnsafe(code) ? c : code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
  }
  return out;
}

/**
 * JSON text with the same value as JSON.stringify gives, but with the characters JSON leaves raw (C1,
 * bidi, separators) written as `\uXXXX`, so `--json` on a terminal is as safe as the text output.
 */
export function terminalSafeJson(value: unknown, indent?: number): string {
  let out = '';
  // JSON.stringify escapes C0 inside strings itself (outside them, C0 is only the indentation's newlines); what it leaves raw is inside strings, where `\uXXXX` is the same character.
  for (const c of JSON.stringify(value, null, indent))
    out += c.codePointAt(0)! > 0x1f && isUnsafe(c.codePointAt(0)!) ? `\\u${hex(c.codePointAt(0)!, 4)}` : c;
  return out;
}
