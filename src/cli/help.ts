// `--help` text, generated from the command registry and option definitions, wrapped to the terminal.

import { COMMANDS, type CommandName, type Exit } from './command-specs.js';
import { configOptions, HELP_OPTION, type OptionDef } from './options.js';

/** The terminal's width (stdout's columns, else $COLUMNS, else 80), kept readable: 60 to 120 columns. */
export function helpWidth(columns: number | undefined = process.stdout.columns, env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = Number(env['COLUMNS']);
  const width = columns !== undefined && columns > 0 ? columns : Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 80;
  return Math.max(60, Math.min(120, width));
}

/** Words of `text` in lines of at most `width` characters; only a word longer than a line is cut. */
export function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  const words = text
    .split(/\s+/)
    .filter(Boolean)
    .flatMap((w) => (w.length <= width ? [w] : (w.match(new RegExp(`.{1,${width}}`, 'g')) ?? [])));
  for (const word of words) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** `-h, --help`, `--resources PATH`, `--node-name N` */
export function optionLabel(d: OptionDef): string {
  const long = `--${d.name}${d.type === 'string' ? ` ${d.arg ?? 'VALUE'}` : ''}`;
  return d.short !== undefined ? `-${d.short}, ${long}` : long;
}

/**
 * The help of an option, saying how to give several values to one that takes them: one per flag
 * (`--resources a.yaml b.yaml` would be one path and a stray argument).
 */
export function optionHelp(d: OptionDef): string {
  if (!d.multiple) return d.help;
  const arg = d.arg ?? 'VALUE';
  return `${d.help}; for several, repeat the flag: --${d.name} ${arg} --${d.name} ${arg}`;
}

const LABEL_COLUMN = 28;

function optionLines(defs: readonly OptionDef[], width: number): string[] {
  const out: string[] = [];
  const textWidth = Math.max(20, width - LABEL_COLUMN);
  for (const d of defs) {
    const label = `  ${optionLabel(d)}`;
    const text = wrapWords(optionHelp(d), textWidth);
    if (label.length + 2 > LABEL_COLUMN) {
      out.push(label);
      for (const t of text) out.push(`${' '.repeat(LABEL_COLUMN)}${t}`);
    } else {
      text.forEach((t, i) => out.push(`${(i === 0 ? label : '').padEnd(LABEL_COLUMN)}${t}`));
    }
  }
  return out;
}

/** `0 in sync, 1 differs, 2 error: …` */
export const exitText = (exits: readonly Exit[]): string => exits.map(([code, meaning]) => `${code} ${meaning}`).join('; ');

/**
 * A command's own options, then one line saying where its configuration flags are listed (they are the same
 * for every command that reads them, and there are dozens). `prog`: `kubectl netfence` for the plugin.
 */
export function commandHelp(name: CommandName, width: number, prog = 'netfence'): string {
  const spec = COMMANDS[name];
  const usage = `usage: ${prog} ${name}${spec.synopsis ? ` ${spec.synopsis}` : ''} [options]`;
  const settings = configOptions(spec.settings).length - 1;
  return [
    ...wrapWords(usage, width),
    '',
    ...wrapWords(spec.summary, width),
    '',
    'Options:',
    ...optionLines([...spec.options, HELP_OPTION], width),
    '',
    ...wrapWords(`Configuration flags (${settings} and --config FILE): netfence help config ${name}`, width),
    '',
    ...wrapWords(`Exit status: ${exitText(spec.exits)}.`, width),
    '',
  ].join('\n');
}

/** The configuration flags `name` reads (every one without a name), with their environment names and defaults. */
export function configHelp(name: CommandName | undefined, width: number): string {
  const defs = configOptions(name === undefined ? undefined : COMMANDS[name].settings);
  const whose = name === undefined ? 'netfence' : `netfence ${name}`;
  return [
    ...wrapWords(`Configuration ${whose} reads (flags win over env NETFENCE_*, which wins over the --config file, then defaults):`, width),
    ...optionLines(defs, width),
    '',
  ].join('\n');
}

export function overviewHelp(width: number): string {
  const names = Object.keys(COMMANDS) as CommandName[];
  const column = Math.max(...names.map((n) => n.length)) + 4;
  const lines = ['usage: netfence <command> [options]', '       netfence --version', '', 'Commands:'];
  for (const name of names) {
    wrapWords(COMMANDS[name].summary, Math.max(20, width - column)).forEach((t, i) =>
      lines.push(`${(i === 0 ? `  ${name}` : '').padEnd(column)}${t}`),
    );
  }
  lines.push(
    '',
    ...wrapWords(
      "Run 'netfence <command> --help' for a command's options, 'netfence help config [<command>]' for the configuration flags.",
      width,
    ),
    '',
  );
  return lines.join('\n');
}
