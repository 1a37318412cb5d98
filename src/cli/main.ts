#!/usr/bin/env node
// netfence command line: finds the command, prints help and version, and turns errors into exit
// status 2 with a message that says what to do. Each command's module is imported only when it runs
// (commands.ts), so `--help` loads no more than the option definitions.

import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { DataplaneCommandError } from '../commands/errors.js';
import { tolerateClosedPipes } from './closed-pipes.js';
import { COMMANDS, isCommandName, type Io } from './command-specs.js';
import { COMMAND_MODULES } from './commands.js';
import { commandHelp, configHelp, helpWidth, overviewHelp } from './help.js';
import { remedyFor } from './hints.js';
import { CommandFailure, UsageError } from './options.js';
import { didYouMean } from './usage-errors.js';

export type { Io } from './command-specs.js';

/** `netfence 0.1.0`, from the package.json beside dist/ (the image copies it there too). */
export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return `netfence ${pkg.version ?? 'unknown'}`;
  } catch {
    return 'netfence (version unknown: package.json not found)';
  }
}

const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h' || arg === 'help';

/**
 * Runs one command line. `prog` names the program in messages (`kubectl netfence` for the plugin, which
 * decides itself which commands it offers before calling this).
 */
export async function main(argv: readonly string[], io: Io, width = helpWidth(), prog = 'netfence'): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    io.out(`${version()} (node ${process.version})\n`);
    return 0;
  }
  if (name === undefined || isHelp(name)) return helpTopic(name === undefined ? [] : rest, io, width, prog, name === undefined ? 2 : 0);
  if (!isCommandName(name)) {
    io.err(`${prog}: unknown command "${name}"${didYouMean(name, Object.keys(COMMANDS))}; '${prog} --help' lists the commands\n`);
    return 2;
  }
  // Anywhere before a lone `--`; parseArgs would accept --help too, but help must not need a valid config.
  const beforeDashes = rest.indexOf('--') === -1 ? rest : rest.slice(0, rest.indexOf('--'));
  if (beforeDashes.includes('--help') || beforeDashes.includes('-h')) {
    io.out(commandHelp(name, width, prog));
    return 0;
  }
  try {
    return await (
      await COMMAND_MODULES[name]()
    )(rest, io);
  } catch (err) {
    io.err(await errorText(`${prog} ${name}`, err));
    return 2;
  }
}

/** `netfence help`, `netfence help why`, `netfence help config [why]`. */
function helpTopic(topics: readonly string[], io: Io, width: number, prog: string, code: number): number {
  const [topic, sub] = topics;
  if (topic === undefined) io.out(overviewHelp(width));
  else if (isCommandName(topic)) io.out(commandHelp(topic, width, prog));
  else if (topic === 'config' && (sub === undefined || isCommandName(sub))) io.out(configHelp(sub, width));
  else {
    const unknown = topic === 'config' ? (sub ?? '') : topic;
    io.err(`${prog} help: no such command "${unknown}"${didYouMean(unknown, Object.keys(COMMANDS))}\n`);
    return 2;
  }
  return code;
}

/** One line for anything a user can cause; a stack only for what must be a bug. */
async function errorText(prefix: string, err: unknown): Promise<string> {
  if (err instanceof UsageError) return `${prefix}: ${err.message} (${prefix} --help)\n`;
  if (err instanceof CommandFailure) return `${prefix}: ${err.message}\n`;
  if (err instanceof DataplaneCommandError) {
    const remedy = remedyFor(err);
    return `${prefix}: ${remedy ? `${remedy} (${err.message.split('\n')[0]})` : err.message}\n`;
  }
  // Loaded only on this path: config/load.ts brings ajv and yaml with it.
  const { ConfigError } = await import('../config/load.js');
  // One problem, one line; several are listed one per line under the first.
  if (err instanceof ConfigError)
    return `${prefix}: ${err.problems.length === 1 ? `invalid configuration: ${err.problems[0]!}` : err.message}\n`;
  // A system call's failure (a file, a socket): its message says what and where.
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return `${prefix}: ${(err as Error).message}\n`;
  return `${prefix}: ${(err as Error).stack ?? String(err)}\n`;
}

/** Resolves once everything written to `stream` before it has been handed on (or the stream failed). */
const flushed = (stream: NodeJS.WriteStream): Promise<void> => new Promise((resolve) => stream.write('', () => resolve()));

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry || process.argv[1]?.endsWith('/netfence')) {
  tolerateClosedPipes();
  // A one-shot command runs each function a few times: V8's optimizing compiler costs more CPU than it
  // saves. Measured as whole processes (`netfence compile`, large tier, 10,000 pods): 1.05 → 0.65 s of
  // CPU; at xl (50,000 pods) about the same either way. The daemon keeps it: it runs for days.
  const oneShot = process.argv[2] !== 'daemon';
  if (oneShot) setFlagsFromString('--no-opt');
  const io: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
      // A one-shot command is done when main returns. Exit once stdout and stderr have taken all it wrote (a
      // pipe takes it asynchronously; --output is written with synchronous calls): left to wind down, the process
      // would first let V8 finish collecting the heap the command leaves (a map diff of 10,000 pods: ~250 MB)
      // and then free it. Measured on that diff (the bench's large tier with one policy added, `/usr/bin/time node
      // dist/cli/main.js map --diff old.json new.json --format json -o diff.json`, three runs each in turns at
      // load ~4): user CPU 4.02 / 3.95 / 3.89 → 3.92 / 3.88 / 3.73 s, one full collection fewer.
      if (oneShot) void Promise.all([flushed(process.stdout), flushed(process.stderr)]).then(() => process.exit(code));
    },
    (err) => {
      io.err(`netfence: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
