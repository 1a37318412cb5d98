#!/usr/bin/env node
// `kubectl netfence …`: kubectl runs `kubectl-netfence` from PATH with the words after `netfence`. The
// plugin speaks kubectl's dialect — `-n/--namespace` is the namespace of bare pod names (default: the
// context's namespace, else `default`), `--context`, `--kubeconfig`, else $KUBECONFIG, else
// ~/.kube/config — and runs the netfence command with the user's own credentials. It offers only the
// commands that answer about the cluster through the API server: the others work on the kernel of the
// machine they run on, which for a kubectl user is a workstation, not a node.

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { tolerateClosedPipes } from './closed-pipes.js';
import { COMMANDS, isCommandName, type CommandName, type Io } from './command-specs.js';
import { commandHelp, helpWidth, wrapWords } from './help.js';
import { main } from './main.js';
import { parseIp } from '../model/address.js';
import { didYouMean } from './usage-errors.js';

/**
 * The commands `kubectl netfence` offers, each with its options that name a pod (a bare name there gets
 * kubectl's namespace). Offering another command is one entry here.
 */
export const PLUGIN_COMMANDS: Readonly<Partial<Record<CommandName, readonly string[]>>> = {
  why: ['src', 'dst'],
  drops: ['pod'],
  // The map of the cluster the kubeconfig points at (`--diff OLD cluster` for a change not applied yet).
  map: [],
};

const PROG = 'kubectl netfence';
const offered = (): CommandName[] => (Object.keys(PLUGIN_COMMANDS) as CommandName[]).filter(isCommandName);

/** A `kubectl netfence` command line that cannot run: one line, exit 2. */
export class PluginUsageError extends Error {
  override readonly name = 'PluginUsageError';
}

/** kubectl's own flags, as the plugin reads them. */
interface KubectlFlags {
  namespace?: string;
  context?: string;
  kubeconfig?: string;
}

const KUBECTL_FLAGS: Readonly<Record<string, keyof KubectlFlags>> = {
  '-n': 'namespace',
  '--namespace': 'namespace',
  '--context': 'context',
  '--kubeconfig': 'kubeconfig',
};

export interface PluginEnv {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly home: string;
  readonly exists: (path: string) => boolean;
  /** The namespace the kubeconfig's (current or named) context sets, if any. */
  readonly contextNamespace: (kubeconfig: string | undefined, context: string | undefined) => string | undefined;
}

/**
 * The netfence command line for a `kubectl netfence` one (help and version pass through unchanged); a
 * command the plugin does not offer is a PluginUsageError.
 */
export function pluginArgv(argv: readonly string[], penv: PluginEnv): string[] {
  const flags: KubectlFlags = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const key = KUBECTL_FLAGS[name];
    if (key === undefined) {
      rest.push(arg);
      continue;
    }
    const value = name !== arg ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new PluginUsageError(`${name} needs a value`);
    flags[key] = value;
  }
  const [command, ...args] = rest;
  // An option first (`--help`, `--version`): main answers it.
  if (
    command === undefined ||
    command.startsWith('--') ||
    command === '-h' ||
    command === '-V' ||
    command === 'help' ||
    command === 'version'
  )
    return rest;
  const podOptions = isCommandName(command) ? PLUGIN_COMMANDS[command] : undefined;
  if (podOptions === undefined) throw new PluginUsageError(refusal(command));
  const kubeconfig = flags.kubeconfig ?? nonEmpty(penv.env['KUBECONFIG']) ?? defaultKubeconfig(penv);
  const api = [
    ...(kubeconfig !== undefined ? ['--kubeconfig', kubeconfig] : []),
    ...(flags.context !== undefined ? ['--context', flags.context] : []),
  ];
  const namespace = () => flags.namespace ?? penv.contextNamespace(kubeconfig, flags.context) ?? 'default';
  const qualify = (ref: string): string => (isBareName(ref) ? `${namespace()}/${ref}` : ref);
  const out = mapValues(args, podOptions, qualify);
  // `kubectl netfence drops -n shop`: kubectl's namespace is the one to show when no pod is named.
  if (command === 'drops' && flags.namespace !== undefined && !hasFlag(out, 'pod') && !hasFlag(out, 'namespace'))
    out.push('--namespace', flags.namespace);
  return [command, ...out, ...api];
}

function refusal(command: string): string {
  const list = offered().join(', ');
  if (isCommandName(command))
    return `${command} is not offered through kubectl: it works on the kernel of the machine it runs on, not through the API server; run \`netfence ${command}\` on the node (kubectl netfence offers: ${list})`;
  return `unknown command "${command}"${didYouMean(command, offered())}; kubectl netfence offers: ${list}`;
}

/** `kubectl netfence --help`: the plugin's commands and kubectl's flags it reads. */
export function pluginHelp(width: number): string {
  const names = offered();
  const column = Math.max(...names.map((n) => n.length), 'kubectl netfence'.length) + 4;
  const lines = [`usage: ${PROG} <command> [-n NS] [--context NAME] [--kubeconfig FILE] [options]`, '', 'Commands:'];
  for (const name of names)
    wrapWords(COMMANDS[name].summary, Math.max(20, width - column)).forEach((t, i) =>
      lines.push(`${(i === 0 ? `  ${name}` : '').padEnd(column)}${t}`),
    );
  const flags: [string, string][] = [
    ['-n, --namespace NS', "the namespace of bare pod names (default: the context's namespace, else default)"],
    ['--context NAME', 'the kubeconfig context (default: its current context)'],
    ['--kubeconfig FILE', 'the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)'],
  ];
  lines.push('', "kubectl's flags:");
  for (const [label, help] of flags)
    wrapWords(help, Math.max(20, width - 24)).forEach((t, i) => lines.push(`${(i === 0 ? `  ${label}` : '').padEnd(24)}${t}`));
  lines.push(
    '',
    ...wrapWords(
      `Run '${PROG} <command> --help' for a command's options. The other netfence commands work on the kernel of the node they run on: run them there (netfence --help).`,
      width,
    ),
    '',
  );
  return lines.join('\n');
}

/** Runs a `kubectl netfence` command line: the plugin's help, a refusal, or the netfence command it maps to. */
export async function pluginMain(argv: readonly string[], io: Io, penv: PluginEnv, width = helpWidth()): Promise<number> {
  let mapped: string[];
  try {
    mapped = pluginArgv(argv, penv);
  } catch (err) {
    if (!(err instanceof PluginUsageError)) throw err;
    io.err(`${PROG}: ${err.message}\n`);
    return 2;
  }
  const [first, second] = mapped;
  const isHelp = (a: string | undefined) => a === '--help' || a === '-h' || a === 'help';
  if (first === undefined || (isHelp(first) && second === undefined)) {
    io.out(pluginHelp(width));
    return first === undefined ? 2 : 0;
  }
  if (isHelp(first) && second !== undefined) {
    if (!isCommandName(second) || PLUGIN_COMMANDS[second] === undefined) {
      io.err(`${PROG} help: ${refusal(second)}\n`);
      return 2;
    }
    io.out(commandHelp(second, width, PROG));
    return 0;
  }
  return main(mapped, io, width, PROG);
}

/** `web`, `web:5432`: no namespace, and not an address. */
function isBareName(ref: string): boolean {
  if (ref.includes('/') || ref.startsWith('[') || parseIp(ref)) return false;
  return parseIp(ref.replace(/:\d+$/, '')) === undefined;
}

/** Rewrites the values of `--name V` and `--name=V` for the named options. */
function mapValues(args: readonly string[], names: readonly string[], f: (v: string) => string): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = names.find((n) => arg === `--${n}` || arg.startsWith(`--${n}=`));
    if (name === undefined) out.push(arg);
    else if (arg === `--${name}`) {
      out.push(arg);
      if (i + 1 < args.length) out.push(f(args[++i]!));
    } else out.push(`--${name}=${f(arg.slice(name.length + 3))}`);
  }
  return out;
}

const hasFlag = (args: readonly string[], name: string): boolean => args.some((a) => a === `--${name}` || a.startsWith(`--${name}=`));
const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);

function defaultKubeconfig(penv: PluginEnv): string | undefined {
  const path = join(penv.home, '.kube', 'config');
  return penv.exists(path) ? path : undefined;
}

/**
 * The namespace of the context kubectl would use: `--context`, else the first `current-context` among the
 * kubeconfig files (kubectl's merge rule: the first file to set a value wins), looked up in the first file
 * that defines that context.
 */
function contextNamespaceFrom(parse: (text: string) => unknown): PluginEnv['contextNamespace'] {
  return (kubeconfig, context) => {
    interface Doc {
      readonly 'current-context'?: string;
      readonly contexts?: readonly { readonly name?: string; readonly context?: { readonly namespace?: string } }[];
    }
    const docs = (kubeconfig ?? '')
      .split(delimiter)
      .filter((f) => f !== '' && existsSync(f))
      .map((f) => (parse(readFileSync(f, 'utf8')) ?? {}) as Doc);
    const name = context ?? docs.find((d) => d['current-context'])?.['current-context'];
    if (name === undefined) return undefined;
    for (const d of docs) {
      const found = d.contexts?.find((c) => c.name === name);
      if (found) return nonEmpty(found.context?.namespace);
    }
    return undefined;
  };
}

// Run as this file, or through the `kubectl-netfence` link npm puts on PATH (argv[1] keeps the link's name).
const entry = process.argv[1];
const isEntry = entry !== undefined && (import.meta.url === new URL(`file://${entry}`).href || entry.endsWith('/kubectl-netfence'));
if (isEntry) {
  tolerateClosedPipes();
  // As main.ts: a one-shot command spends more on V8's optimizing compiler than it saves.
  setFlagsFromString('--no-opt');
  const io = { out: (t: string) => process.stdout.write(t), err: (t: string) => process.stderr.write(t) };
  const run = async (): Promise<number> => {
    const { parse } = await import('yaml');
    return pluginMain(process.argv.slice(2), io, {
      env: process.env,
      home: homedir(),
      exists: existsSync,
      contextNamespace: contextNamespaceFrom(parse),
    });
  };
  run().then(
    (code) => (process.exitCode = code),
    (err) => {
      io.err(`kubectl netfence: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
