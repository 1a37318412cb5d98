// `--help` is generated from the option definitions the parser uses: every option a command accepts is
// in its help, and nothing else; help fits the terminal; --version prints package.json's version.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS, commandOptions, parseCommand, type CommandName } from '../../../src/cli/command-specs.js';
import { commandHelp, configHelp, helpWidth, overviewHelp, wrapWords } from '../../../src/cli/help.js';
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

  it('lists its own options, and one line saying where its configuration flags are', () => {
    const own = documented(help).long;
    expect([...own].sort()).toEqual([...COMMANDS[name].options.map((d) => d.name), 'help'].sort());
    expect(help).toMatch(new RegExp(`^Configuration flags \\(\\d+ and --config FILE\\): netfence help config ${name}$`, 'm'));
    expect(help).toMatch(/^Exit status: 0 /m);
  });

  it('its help and `netfence help config <command>` list exactly the options the parser accepts', () => {
    const { long, short } = documented(`${help}\n${configHelp(name, 80)}`);
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
  it('the daemon accepts every configuration flag config/load.ts reads', () => {
    expect(Object.keys(parserOptions(commandOptions('daemon')))).toEqual(expect.arrayContaining(Object.keys(CONFIG_FLAG_OPTIONS)));
  });

  it.each<{ argv: string[]; says: string }>([
    {
      argv: ['why', '--src', 'a/b', '--dst', 'a/c:80', '--revoke-established'],
      says: 'netfence why: --revoke-established is a setting netfence why does not read (read by: daemon, apply, compile, diff)',
    },
    {
      argv: ['apply', '--dry-run'],
      says: 'netfence apply: --dry-run is a setting netfence apply does not read (read by: daemon); netfence diff',
    },
    {
      argv: ['compile', '--resync-interval-seconds', '5'],
      says: 'netfence compile: --resync-interval-seconds is a setting netfence compile does not read (read by: daemon)',
    },
    {
      argv: ['drops', '--node-name', 'n1'],
      says: 'netfence drops: --node-name is a setting netfence drops does not read (read by: daemon, apply, compile, diff, trace)',
    },
  ])('a setting the command does not read is refused, naming those that do: $argv', async ({ argv, says }) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.err.startsWith(says)).toBe(true);
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  });

  it.each<{ argv: string[]; says: string }>([
    { argv: ['compile', '--resourcse', 'x'], says: 'netfence compile: unknown option --resourcse (did you mean --resources?)' },
    { argv: ['why', '--kubconfig', 'k'], says: 'netfence why: unknown option --kubconfig (did you mean --kubeconfig?)' },
    { argv: ['why', '--saved', 'x'], says: 'netfence why: --saved is not an option of netfence why (it is one of: diff, inspect, trace)' },
    { argv: ['why', '--src'], says: 'netfence why: --src needs a value (NS/POD|IP)' },
    { argv: ['diff', '--json=yes'], says: 'netfence diff: --json takes no value' },
    {
      argv: ['compile', '--resources', 'a.yaml', 'b.yaml'],
      says: 'netfence compile: unexpected argument "b.yaml": give each value its own --resources (--resources a.yaml --resources b.yaml)',
    },
  ])('a mistyped command line is one line, exit 2: $argv', async ({ argv, says }) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`${says} (netfence ${argv[0]!} --help)\n`);
  });

  it('a mistyped command gets "did you mean"', async () => {
    expect(await run('compil')).toEqual({
      code: 2,
      out: '',
      err: `netfence: unknown command "compil" (did you mean compile?); 'netfence --help' lists the commands\n`,
    });
  });

  it('netfence help config [<command>] lists the configuration flags, each command its own', async () => {
    const all = await run('help', 'config');
    expect(all.code).toBe(0);
    for (const flag of Object.keys(CONFIG_FLAG_OPTIONS)) expect(all.out).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
    const why = await run('help', 'config', 'why');
    expect(why.out).toMatch(/^ {2}--unknown-pods /m);
    expect(why.out).not.toMatch(/--revoke-established/);
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

  it('an unknown command or flag exits 2 and says so in one line', async () => {
    expect(await run('frobnicate')).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^netfence: unknown command "frobnicate"; [^\n]*\n$/),
    });
    const r = await run('compile', '--frobnicate');
    expect(r).toEqual({ code: 2, out: '', err: 'netfence compile: unknown option --frobnicate (netfence compile --help)\n' });
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
