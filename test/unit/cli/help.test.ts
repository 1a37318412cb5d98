// `--help` is generated from the option definitions the parser uses: every option a command accepts is
// in its help, and nothing else; help fits the terminal; --version prints package.json's version.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS, commandOptions, parseCommand, type CommandName } from '../../../src/cli/command-specs.js';
import { commandHelp, helpWidth, overviewHelp, wrapWords } from '../../../src/cli/help.js';
import { main } from '../../../src/cli/main.js';
import { parserOptions, UsageError } from '../../../src/cli/options.js';
import { CONFIG_FLAG_OPTIONS } from '../../../src/config/load.js';

const NAMES = Object.keys(COMMANDS) as CommandName[];

/** The options a help text documents: `  -h, --help`, `  --resources PATH…` at the start of a line. */
function documented(help: string): { long: Set<string>; short: Set<string> } {
  const long = new Set<string>();
  const short = new Set<string>();
  for (const line of help.split('\n')) {
    const m = /^ {2}(?:-(\w), )?--([a-z0-9-]+)/.exec(line);
    if (!m) continue;
    if (m[1]) short.add(m[1]);
    long.add(m[2]!);
  }
  return { long, short };
}

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) }, 80);
  return { code, out, err };
}

describe.each(NAMES)('netfence %s --help', (name) => {
  const parser = parserOptions(commandOptions(name));
  const help = commandHelp(name, 80);

  it('lists exactly the options the parser accepts', () => {
    const { long, short } = documented(help);
    expect([...long].sort()).toEqual(Object.keys(parser).sort());
    expect([...short].sort()).toEqual(
      Object.values(parser)
        .flatMap((o) => (o.short ? [o.short] : []))
        .sort(),
    );
  });

  it('every documented option parses, and an undocumented one is a usage error', () => {
    for (const flag of documented(help).long) {
      const def = parser[flag]!;
      const argv = def.type === 'string' ? [`--${flag}`, 'x'] : [`--${flag}`];
      expect(() => parseCommand(name, argv)).not.toThrow();
    }
    expect(() => parseCommand(name, ['--no-such-flag'])).toThrow(UsageError);
  });

  it.each([60, 80, 120])('fits %i columns', (width) => {
    for (const line of commandHelp(name, width).split('\n')) expect(line.length).toBeLessThanOrEqual(width);
  });

  it('is what `netfence <command> --help` prints, without reading any configuration', async () => {
    const r = await run(name, '--help', '--config', '/nonexistent/netfence.yaml');
    expect(r).toEqual({ code: 0, out: help, err: '' });
  });
});

describe('the command line', () => {
  it('accepts every configuration flag config/load.ts reads', () => {
    for (const name of NAMES)
      expect(Object.keys(parserOptions(commandOptions(name)))).toEqual(expect.arrayContaining(Object.keys(CONFIG_FLAG_OPTIONS)));
  });

  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { version: string };
    const r = await run('--version');
    expect(r.code).toBe(0);
    expect(r.out).toBe(`netfence ${version} (node ${process.version})\n`);
  });

  it('the overview names every command and fits the terminal', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    for (const name of NAMES) expect(r.out).toMatch(new RegExp(`^  ${name} `, 'm'));
    for (const line of overviewHelp(60).split('\n')) expect(line.length).toBeLessThanOrEqual(60);
  });

  it('an unknown command or flag exits 2 and says so', async () => {
    expect(await run('frobnicate')).toMatchObject({ code: 2, err: expect.stringMatching(/^netfence: unknown command "frobnicate"/) });
    const r = await run('compile', '--frobnicate');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^netfence compile: Unknown option '--frobnicate'/);
    expect(r.err).toMatch(/usage: netfence compile --node-name N --resources PATH… \[options\]/);
  });

  it('no arguments prints the overview and exits 2', async () => {
    expect(await run()).toMatchObject({ code: 2, out: overviewHelp(80) });
  });

  it('help width follows the terminal, within 60..120 columns', () => {
    expect(helpWidth(100, {})).toBe(100);
    expect(helpWidth(undefined, { COLUMNS: '70' })).toBe(70);
    expect(helpWidth(undefined, {})).toBe(80);
    expect(helpWidth(20, {})).toBe(60);
    expect(helpWidth(300, {})).toBe(120);
  });

  it('wraps at spaces, cutting only a word longer than a line', () => {
    expect(wrapWords('aa bb cc dd', 5)).toEqual(['aa bb', 'cc dd']);
    expect(wrapWords('a-very-long-word b', 6)).toEqual(['a-very', '-long-', 'word b']);
  });
});
