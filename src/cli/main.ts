#!/usr/bin/env node
// netfence command line: the composition root. Each command's module wires config, sources and runners.

import { ConfigError } from '../config/load.js';
import { DataplaneCommandError } from '../dataplane/errors.js';
import { applyCommand, cleanupCommand, compileCommand, diffCommand, type Io } from './commands-oneshot.js';
import { UsageError } from './context.js';

type Command = (argv: readonly string[], io: Io) => Promise<number>;

interface CommandSpec {
  readonly run: () => Promise<Command>;
  readonly usage: string;
  readonly summary: string;
}

const COMMANDS: Record<string, CommandSpec> = {
  daemon: {
    run: async () => (await import('./daemon.js')).daemonCommand,
    usage: 'netfence daemon --node-name N [--kubeconfig F | --resources PATH…] [--config F] [--dry-run] [--revoke-established] [--no-anti-spoofing]',
    summary: 'watch the cluster, program this node, repair drift, serve /healthz /readyz /metrics',
  },
  apply: {
    run: async () => applyCommand,
    usage: 'netfence apply --node-name N --resources PATH…',
    summary: 'converge this network namespace once from manifests, then exit',
  },
  compile: {
    run: async () => compileCommand,
    usage: 'netfence compile --node-name N --resources PATH… [--ipv6]',
    summary: 'print the desired ipset restore lines, then the iptables-restore --noflush payload (no root needed)',
  },
  diff: {
    run: async () => diffCommand,
    usage: 'netfence diff [--node-name N] [--kubeconfig F | --resources PATH…] [--saved FILE] [--json]',
    summary: 'dry run: unified diff of desired vs live kernel (or a saved dump); exit 0 in sync, 1 differs, 2 error',
  },
  inspect: {
    run: async () => (await import('./inspect.js')).inspectCommand,
    usage: 'netfence inspect [--saved FILE] [--pod ns/name] [--policy ns/name] [--family 4|6] [--json]',
    summary: 'show per local pod: dispatch → workload chain → policy chains → rules, with policy names',
  },
  trace: {
    run: async () => (await import('./trace.js')).traceCommand,
    usage: 'netfence trace --src IP|ns/pod --dst IP|ns/pod --proto tcp|udp|sctp --port N [--saved FILE] [--resources PATH… --node-name N] [--in-iface PORT] [--json]',
    summary: 'walk one new packet through the live (or saved) ruleset and name the rule that decided it',
  },
  drops: {
    run: async () => (await import('./drops.js')).dropsCommand,
    usage: 'netfence drops [--pod ns/name] [--namespace NS] [--policy ns/name] [--follow] [--json] [--url http://127.0.0.1:9476]',
    summary: "show the connections this node's daemon denied, and why (its flow log)",
  },
  cleanup: {
    run: async () => cleanupCommand,
    usage: 'netfence cleanup',
    summary: 'remove every chain, rule and ipset netfence owns; touch nothing else',
  },
};

const COMMON_HELP = `
Common options:
  --config F              YAML/JSON config file (flags > env NETFENCE_* > file > defaults)
  --node-name N           this node (default: $NODE_NAME)
  --pod-cidr CIDR         this node's pod CIDR (repeatable; default: Node spec.podCIDRs, then flannel subnet.env)
  --chain-prefix P        owned chain prefix (default nf-)        --ipset-prefix P  (default nf)
  --backend auto|nft|legacy                                       --unknown-pods fail-closed|fail-open
  --netns NAME            act inside a named network namespace (tests, sandbox)
  -h, --help              this help
`;

function help(io: Io, name?: string): void {
  const spec = name ? COMMANDS[name] : undefined;
  if (spec) {
    io.out(`usage: ${spec.usage}\n\n${spec.summary}\n${COMMON_HELP}`);
    return;
  }
  io.out('usage: netfence <command> [options]\n\ncommands:\n');
  for (const [cmd, s] of Object.entries(COMMANDS)) io.out(`  ${cmd.padEnd(8)} ${s.summary}\n`);
  io.out(`\nRun 'netfence <command> --help' for a command's options.\n`);
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    help(io, rest[0]);
    return name ? 0 : 2;
  }
  const spec = COMMANDS[name];
  if (!spec) {
    io.err(`netfence: unknown command "${name}"\n`);
    help(io);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    help(io, name);
    return 0;
  }
  try {
    return await (await spec.run())(rest, io);
  } catch (err) {
    if (err instanceof UsageError) io.err(`netfence ${name}: ${err.message}\nusage: ${spec.usage}\n`);
    else if (err instanceof ConfigError || err instanceof DataplaneCommandError) io.err(`netfence ${name}: ${err.message}\n`);
    else io.err(`netfence ${name}: ${(err as Error).stack ?? String(err)}\n`);
    return 2;
  }
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry || process.argv[1]?.endsWith('/netfence')) {
  // `netfence compile | head` closes the pipe early: that is the reader's choice, not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  const io: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };
  main(process.argv.slice(2), io).then(
    (code) => (process.exitCode = code),
    (err) => {
      io.err(`netfence: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
