// docs/commands.md's option tables, generated from the command specs (src/cli/command-specs.ts) and the
// configuration flags (src/cli/options.ts), the same definitions the parser and `--help` use: a flag the
// parser accepts cannot be missing from the document, nor a removed one linger. Everything between the two
// markers is this output; the prose around them is written by hand.

import { COMMANDS, type CommandName } from '../../src/cli/command-specs.js';
import { optionHelp, optionLabel } from '../../src/cli/help.js';
import { configKeyOptions, configOptions, HELP_OPTION, type OptionDef } from '../../src/cli/options.js';
import { CONFIG_KEYS } from '../../src/config/schema.js';

export const BEGIN =
  '<!-- BEGIN generated: option tables (npm run docs:commands; from src/cli/command-specs.ts and src/cli/options.ts) -->';
export const END = '<!-- END generated: option tables -->';

/** Inside a table cell: `|` would end the cell, a newline the row. */
const inCell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
/** Prose in a cell: also `*` (`*.yaml, *.yml` would turn italic). */
const cell = (text: string): string => inCell(text).replace(/\*/g, '\\*');
const code = (text: string): string => `\`${inCell(text)}\``;

function optionRows(defs: readonly OptionDef[]): string[] {
  return ['| option | what it does |', '|---|---|', ...defs.map((d) => `| ${code(optionLabel(d))} | ${cell(optionHelp(d))} |`)];
}

function commandSection(name: CommandName): string[] {
  const spec = COMMANDS[name];
  const every = CONFIG_KEYS.every((k) => (spec.settings as readonly string[]).includes(k));
  const flags = every
    ? ['every setting']
    : configOptions(spec.settings)
        .slice(1)
        .map((d) => code(`--${d.name}`));
  return [
    `### netfence ${name}`,
    '',
    code(`netfence ${name}${spec.synopsis ? ` ${spec.synopsis}` : ''} [options]`),
    '',
    `${spec.summary[0]!.toUpperCase()}${spec.summary.slice(1)}.`,
    '',
    ...optionRows([...spec.options, HELP_OPTION]),
    '',
    `Configuration it reads (see "Configuration" below; any other setting's flag is refused): \`--config FILE\`, ${flags.join(', ')}.`,
    '',
    '| exit status | meaning |',
    '|---|---|',
    ...spec.exits.map(([status, meaning]) => `| ${status} | ${cell(meaning)} |`),
    '',
  ];
}

function configSection(): string[] {
  const names = Object.keys(COMMANDS) as CommandName[];
  const rows = CONFIG_KEYS.flatMap((key) => {
    const readers = names.filter((n) => (COMMANDS[n].settings as readonly string[]).includes(key)).join(', ');
    return configKeyOptions(key).map((d) => `| ${code(optionLabel(d))} | \`${key}\` | ${readers} | ${cell(optionHelp(d))} |`);
  });
  const file = configOptions([])[0]!;
  return [
    '## Configuration',
    '',
    'Every setting is a key of the `--config FILE` (YAML or JSON), an environment variable and a flag; flags win over',
    'the environment, which wins over the file, then the defaults. A command takes only the flags of the settings',
    'it reads (`netfence help config <command>` lists them); the file and the environment may hold any setting.',
    '',
    '| flag | config key | read by | what it does (env; default) |',
    '|---|---|---|---|',
    `| ${code(optionLabel(file))} | | every command | ${cell(file.help)} |`,
    ...rows,
    '',
  ];
}

/** The generated part of docs/commands.md. */
export function generatedTables(): string {
  const names = Object.keys(COMMANDS) as CommandName[];
  return [BEGIN, '', '## Options of each command', '', ...names.flatMap(commandSection), ...configSection(), END].join('\n');
}

/** `document` with its generated part replaced by the current tables; an error when it has no markers. */
export function withGeneratedTables(document: string): string {
  const begin = document.indexOf(BEGIN);
  const end = document.indexOf(END);
  if (begin === -1 || end === -1 || end < begin) throw new Error(`docs/commands.md has no generated part (the lines ${BEGIN} … ${END})`);
  return `${document.slice(0, begin)}${generatedTables()}${document.slice(end + END.length)}`;
}
