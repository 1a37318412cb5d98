// Plain-text layout for terminals: wrap at word boundaries so no line passes the width.

export const WIDTH = 80;

/**
 * `first` prefixes the first line and `indent` the others. A word longer than a line is cut, so the
 * width holds even for a long set name after a deep indent.
 */
export function wrap(text: string, first: string, indent: string = ' '.repeat(first.length), width = WIDTH): string[] {
  const lines: string[] = [];
  let prefix = first;
  let line = '';
  const room = (): number => Math.max(8, width - prefix.length);
  const flush = (): void => {
    lines.push((prefix + line).trimEnd());
    prefix = indent;
    line = '';
  };
  for (let word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > room()) flush();
    while (word.length > room()) {
      if (line !== '') flush();
      line = word.slice(0, room());
      word = word.slice(line.length);
      flush();
    }
    if (word !== '') line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '' || lines.length === 0) flush();
  return lines;
}
