// One clear line for each way a command line can be wrong: node:util parseArgs's own messages ("Unknown
// option '--kubconfig'. To specify a positional argument starting with a '-', place it at the end of the
// command after '--', …") reworded, with a "did you mean" for a misspelt option or command.

import type { OptionDef } from './options.js';

/** The closest of `candidates` to `word`: same letters in another case, a prefix, or at most two edits away. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  const ranked = candidates
    .map((c) => ({ c, d: editDistance(c.toLowerCase(), w) }))
    .filter(({ c, d }) => d <= Math.min(2, Math.max(1, Math.floor(w.length / 2))) || (w.length >= 3 && c.toLowerCase().startsWith(w)))
    .sort((a, b) => a.d - b.d);
  return ranked[0]?.c;
}

export const didYouMean = (word: string, candidates: readonly string[], prefix = ''): string => {
  const best = closest(word, candidates);
  return best === undefined ? '' : ` (did you mean ${prefix}${best}?)`;
};

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

export interface ParseContext {
  /** `netfence why` */
  readonly command: string;
  readonly argv: readonly string[];
  /** The options the command accepts. */
  readonly accepted: readonly OptionDef[];
  /** Which other commands take an option this one does not (`--saved`: diff, inspect, trace). */
  readonly elsewhere: (option: string) => readonly string[];
}

/** parseArgs's error, as one line naming the option and what to do. */
export function explainParseError(err: unknown, ctx: ParseContext): string {
  const message = (err as Error).message;
  const code = (err as { code?: string }).code;
  const def = (flag: string) => ctx.accepted.find((d) => `--${d.name}` === flag || (d.short !== undefined && `-${d.short}` === flag));
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'([^']+)'/.exec(message)?.[1] ?? '';
    const name = flag.replace(/^-+/, '').replace(/=.*$/, '');
    const others = ctx.elsewhere(name);
    if (others.length > 0) return `--${name} is not an option of ${ctx.command} (it is one of: ${others.join(', ')})`;
    return `unknown option ${flag}${didYouMean(
      name,
      ctx.accepted.map((d) => d.name),
      '--',
    )}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const flag = /Option '(-[^' ]+|--[^' ]+)/.exec(message)?.[1] ?? '';
    const d = def(flag);
    if (/does not take an argument/.test(message)) return `${flag} takes no value`;
    const needs = `${flag} needs a value${d?.arg !== undefined ? ` (${d.arg})` : ''}`;
    return /ambiguous/.test(message) ? `${needs}; a value starting with "-" is written ${flag}=VALUE` : needs;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const word = /'([^']*)'/.exec(message)?.[1] ?? '';
    // `--resources a.yaml b.yaml`: a repeatable option takes one value per flag.
    const at = ctx.argv.indexOf(word);
    const before = at >= 2 ? def(ctx.argv[at - 2]!) : undefined;
    if (before?.multiple === true && at >= 2)
      return `unexpected argument "${word}": give each value its own --${before.name} (--${before.name} ${ctx.argv[at - 1]!} --${before.name} ${word})`;
    return `unexpected argument "${word}": ${ctx.command} takes options only`;
  }
  return message;
}
