// docs/commands.md lists every option of every command and every configuration flag, with each command's
// exit statuses: its tables are what scripts/docs-commands.ts generates from the command specs (the parser's
// own definitions), and `npm run check` runs the same comparison.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS, commandOptions, type CommandName } from '../../../src/cli/command-specs.js';
import { CONFIG_OPTIONS } from '../../../src/cli/options.js';
import { withGeneratedTables } from '../../../scripts/lib/commands-doc.js';

const doc = readFileSync(join(process.cwd(), 'docs', 'commands.md'), 'utf8');
const NAMES = Object.keys(COMMANDS) as CommandName[];

/** The text under `### netfence <name>`, up to the next heading. */
function section(name: CommandName): string {
  const start = doc.indexOf(`\n### netfence ${name}\n`);
  if (start === -1) return '';
  const next = doc.slice(start + 1).search(/\n#{2,3} /);
  return next === -1 ? doc.slice(start) : doc.slice(start, start + 1 + next);
}

describe('docs/commands.md', () => {
  it('its option tables are what the command specs generate (npm run docs:commands)', () => {
    expect(doc).toBe(withGeneratedTables(doc));
  });

  it.each(NAMES)('netfence %s: every option the parser accepts, and its exit statuses', (name) => {
    const text = section(name);
    const listed = (option: string, within: string) => new RegExp(`^\\| \`(-\\w, )?--${option}[ \`]`, 'm').test(within);
    for (const d of COMMANDS[name].options)
      expect({ option: d.name, listed: listed(d.name, text) }).toEqual({ option: d.name, listed: true });
    for (const [status] of COMMANDS[name].exits) expect(text).toMatch(new RegExp(`^\\| ${status} \\| `, 'm'));
    // Its configuration flags are named there and described under "Configuration".
    for (const d of commandOptions(name).filter((o) => CONFIG_OPTIONS.includes(o)))
      expect({ option: d.name, listed: listed(d.name, doc) }).toEqual({ option: d.name, listed: true });
  });
});
