// The map as JSON, written piece by piece: the large tier's map is 70 MB of JSON, and one string of it (with
// the copy a file write makes of it) more than doubled the command's peak memory. The text is exactly what
// `JSON.stringify(value, null, indent)` gives for plain data (objects, arrays, strings, numbers, booleans,
// null; no toJSON, Map or class instance): the outer levels are written here, each element deeper down is
// one JSON.stringify call.

/** Where text goes, one piece after another. */
export type Out = (text: string) => void;

/** What a writer hands out, as one string (for a caller that wants the whole text). */
export function collect(writer: (out: Out) => void): string {
  const parts: string[] = [];
  writer((text) => parts.push(text));
  return parts.join('');
}

/** Levels written piece by piece: the map, its lists, their elements (a group, an edge). */
const STREAMED_DEPTH = 2;

/**
 * `JSON.stringify(value, null, indent)` of plain data, written to `out` in pieces. `indent` 0: no spaces,
 * as `JSON.stringify(value)`.
 */
export function writeJson(value: unknown, out: Out, indent = 0): void {
  write(value, out, indent === 0 ? '' : ' '.repeat(indent), '', 0);
}

function write(value: unknown, out: Out, gap: string, at: string, depth: number): void {
  if (depth >= STREAMED_DEPTH || value === null || typeof value !== 'object') {
    out(gap === '' ? JSON.stringify(value) : indented(value, gap, at.length / gap.length));
    return;
  }
  const inner = at + gap;
  const open = gap === '' ? '' : `\n${inner}`;
  const close = gap === '' ? '' : `\n${at}`;
  const colon = gap === '' ? ':' : ': ';
  if (Array.isArray(value)) {
    if (value.length === 0) return out('[]');
    out('[');
    value.forEach((v: unknown, i) => {
      out(i === 0 ? open : `,${open}`);
      // As JSON.stringify: what JSON cannot hold is null in an array.
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') out('null');
      else write(v, out, gap, inner, depth + 1);
    });
    return out(`${close}]`);
  }
  let first = true;
  for (const [k, v] of Object.entries(value)) {
    // …and a property left out of an object.
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    out(`${first ? '{' : ','}${open}${JSON.stringify(k)}${colon}`);
    first = false;
    write(v, out, gap, inner, depth + 1);
  }
  out(first ? '{}' : `${close}}`);
}

/**
 * JSON.stringify's text of `value` as it stands `levels` deep in an indented layout: stringified inside that
 * many one-element arrays, which JSON.stringify indents, and cut out of them (no pass over the text to indent
 * each line: that pass was a tenth of the map's JSON output time).
 */
function indented(value: unknown, gap: string, levels: number): string {
  let wrapped = value;
  for (let i = 0; i < levels; i++) wrapped = [wrapped];
  const text = JSON.stringify(wrapped, null, gap);
  // Each level opens with `[`, a newline and its indent, and closes with a newline, the outer indent and `]`.
  let head = 0;
  let tail = 0;
  for (let i = 1; i <= levels; i++) head += 2 + i * gap.length;
  for (let i = 0; i < levels; i++) tail += 2 + i * gap.length;
  return text.slice(head, text.length - tail);
}
