// The commands: name, synopsis and options, parsed and documented from the same list. Which module runs
// each is commands.ts, apart from this file: the command modules import parseCommand from here, and only
// main.ts loads them.
//
// To add a command: one entry here, one in commands.ts, and a module whose function calls
// `parseCommand('<name>', argv)`; docs/commands.md's tables follow (`npm run docs:commands`).

import { parseArgs } from 'node:util';
import { CONFIG_KEYS, type ConfigKey } from '../config/schema.js';
import {
  configKeyOptions,
  CONFIG_OPTIONS,
  configOptions,
  HELP_OPTION,
  OPT,
  parserOptions,
  SETTING_GROUPS,
  UsageError,
  type OptionDef,
  type Parsed,
} from './options.js';
import { explainParseError } from './usage-errors.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export type Command = (argv: readonly string[], io: Io) => Promise<number>;

export interface CommandSpec {
  /** What follows `netfence <name>` in the usage line (the required flags; `[options]` is added). */
  readonly synopsis: string;
  readonly summary: string;
  /** The command's own options; every command also takes --config, the flags of `settings`, and --help. */
  readonly options: readonly OptionDef[];
  /** The configuration keys it reads (SETTING_GROUPS); the flag of any other key is refused, not ignored. */
  readonly settings: readonly ConfigKey[];
  /** Each exit status and what it means. */
  readonly exits: readonly Exit[];
}

export type Exit = readonly [status: number, meaning: string];

const EXIT_ERROR: Exit = [2, 'error: a usage or configuration error, unreadable input, or a failure, said in one line on stderr'];

const { ruleset, kernel, manifests, log, daemonAddress } = SETTING_GROUPS;

/**
 * What compiling every node of a cluster reads (`why`, `map`): each node is compiled with its own name and pod
 * CIDRs, so those are not settings here; strict mode and the flannel lease change nothing about a new connection.
 */
const perNode: readonly ConfigKey[] = ['nodeName', 'podCidrs', 'revokeEstablished', 'flannelSubnetEnv'];
const clusterRuleset: readonly ConfigKey[] = ruleset.filter((key) => !perNode.includes(key));

export const COMMANDS = {
  daemon: {
    synopsis: '--node-name N [--kubeconfig F | --resources PATH [--resources PATH…]]',
    summary: 'watch the cluster, program this node, repair drift, serve /healthz /readyz /metrics',
    settings: SETTING_GROUPS.every,
    exits: [[0, 'stopped by SIGTERM or SIGINT (the programmed rules stay)'], EXIT_ERROR],
    options: [OPT.kubeconfig, OPT.resources, OPT.netns],
  },
  apply: {
    synopsis: '--node-name N --resources PATH [--resources PATH…]',
    summary: 'converge this network namespace once from manifests, then exit',
    settings: [...ruleset, ...kernel, ...manifests, ...log],
    exits: [[0, 'applied'], EXIT_ERROR],
    options: [OPT.resources, OPT.netns],
  },
  compile: {
    synopsis: '--node-name N --resources PATH [--resources PATH…]',
    summary: 'print the desired ipset restore lines, then the iptables-restore --noflush payload (no root needed)',
    settings: [...ruleset, ...kernel, ...manifests, ...log],
    exits: [[0, 'printed'], EXIT_ERROR],
    options: [
      OPT.resources,
      OPT.netns,
      {
        name: 'family',
        type: 'string',
        arg: '4|6|both',
        help: 'which IP family to print (default 4; --ipv6 is --family 6); each family printed starts with a "# netfence compile: IPv4|6" line',
      },
    ],
  },
  diff: {
    synopsis: '[--node-name N] [--kubeconfig F | --resources PATH [--resources PATH…]]',
    summary: 'dry run: unified diff of desired vs live kernel (or a saved dump); exit 0 in sync, 1 differs, 2 error',
    settings: [...ruleset, ...kernel, ...manifests, ...log],
    exits: [[0, 'in sync'], [1, 'differs'], EXIT_ERROR],
    options: [OPT.kubeconfig, OPT.resources, OPT.netns, OPT.saved, OPT.json],
  },
  inspect: {
    synopsis: '[--pod ns/name] [--policy ns/name]',
    summary: 'show per local pod: dispatch → workload chain → policy chains → rules, with policy names',
    settings: [...kernel, ...log, 'bridge'],
    exits: [[0, 'printed'], [1, 'the --pod or --policy named has no rules in the ruleset'], EXIT_ERROR],
    options: [
      OPT.netns,
      OPT.saved,
      OPT.json,
      { name: 'pod', type: 'string', arg: 'NS/NAME', help: 'only this local pod' },
      { name: 'policy', type: 'string', arg: 'NS/NAME', help: 'only the pods this policy is used by, and its rules' },
      {
        name: 'family',
        type: 'string',
        arg: '4|6',
        help: "IP family (default: a --pod address's family; the family that has the --pod ns/name, IPv4 when it has both; else 4)",
      },
    ],
  },
  trace: {
    synopsis: '--src IP|ns/pod --dst IP|ns/pod (--proto tcp|udp|sctp --port N | --proto icmp|icmpv6 --icmp-type N)',
    summary:
      'walk one new packet through the live (or saved) ruleset and name the rule that decided it; exit 0 allowed, 1 dropped, 2 error',
    // podCidrs: which addresses are this node's pods (config/load.ts podCidrsOf, as the daemon decides it).
    settings: ['nodeName', 'podCidrs', 'bridge', ...kernel, ...manifests, ...log],
    exits: [[0, 'allowed'], [1, 'dropped'], EXIT_ERROR],
    options: [
      { name: 'src', type: 'string', arg: 'IP|NS/POD', help: 'source address or pod (required)' },
      { name: 'dst', type: 'string', arg: 'IP|NS/POD', help: 'destination address or pod (required)' },
      { name: 'proto', type: 'string', arg: 'tcp|udp|sctp|icmp|icmpv6', help: 'protocol (required); icmp implies IPv4, icmpv6 IPv6' },
      { name: 'port', type: 'string', arg: 'N', help: 'destination port (required for tcp, udp, sctp)' },
      {
        name: 'icmp-type',
        type: 'string',
        arg: 'N',
        help: 'ICMP/ICMPv6 message type (required for icmp, icmpv6): e.g. 135 neighbour solicitation, 128 echo request',
      },
      {
        name: 'hop-limit',
        type: 'string',
        arg: 'N',
        help: 'icmpv6: the hop limit it is sent with (default 255 for ND 133-137, 1 for MLD, else 64); a routed packet arrives one lower',
      },
      { name: 'src-port', type: 'string', arg: 'N', help: 'source port' },
      { name: 'uplink', type: 'string', arg: 'IF', help: "the node's interface to other nodes (default eth0)" },
      {
        name: 'family',
        type: 'string',
        arg: '4|6',
        help: "IP family of the packet (default: the addresses' family; for two ns/pod, the family both have, IPv4 when they share both)",
      },
      {
        name: 'in-iface',
        type: 'string',
        arg: 'VETH',
        help: 'the bridge port (host veth) the packet enters from: adds the anti-spoofing verdict for its source (given even when this node has no netfence chains of that family)',
      },
      {
        name: 'to-node',
        type: 'boolean',
        help: "--dst is an address of this node: walk INPUT (a local pod to its own node) instead of FORWARD; implied when the manifests or the API list --dst among this node's addresses",
      },
      OPT.resources,
      OPT.kubeconfig,
      OPT.netns,
      OPT.saved,
      OPT.json,
    ],
  },
  why: {
    synopsis: '--src NS/POD|IP --dst NS/POD|IP[:PORT] [--proto tcp|udp|sctp] [--port N]',
    summary:
      "one answer for a connection across the cluster: compile each node it crosses, walk the packet through the source's egress and the destination's ingress, name the tier, policy and rule that decided; exit 0 allowed, 1 dropped, 2 error",
    settings: [...clusterRuleset, ...manifests, ...daemonAddress],
    exits: [
      [0, 'allowed'],
      [1, 'dropped'],
      [2, "error, or --live could not reach a node's daemon (after the answer is printed)"],
    ],
    options: [
      { name: 'src', type: 'string', arg: 'NS/POD|IP', help: 'source pod or address (required)' },
      { name: 'dst', type: 'string', arg: 'NS/POD|IP[:PORT]', help: 'destination pod or address (required); a :PORT suffix is --port' },
      { name: 'proto', type: 'string', arg: 'tcp|udp|sctp', help: 'protocol (default tcp)' },
      { name: 'port', type: 'string', arg: 'N', help: 'destination port (required unless --dst ends in :PORT)' },
      {
        name: 'family',
        type: 'string',
        arg: '4|6',
        help: "IP family of the packet (default: the addresses' family; for two pods, the family both have, IPv4 when they share both)",
      },
      OPT.resources,
      OPT.kubeconfig,
      OPT.context,
      OPT.json,
      {
        name: 'live',
        type: 'boolean',
        help: "also ask each node's daemon (/readyz, /flows) whether its kernel agrees, and, when a domainNames rule would allow the connection, the source pod's daemon (/learned) whether the destination was learned (for which name, until when): through --daemon-url, else the API server's pod proxy to the netfence pod on that node (needs listenAddress on the node's address); exit 2 naming a node it cannot reach",
      },
      OPT.daemonUrl,
      OPT.daemonNamespace,
    ],
  },
  map: {
    synopsis: '[--resources PATH… | --kubeconfig F] [--format html|svg|dot|md|json] [-o FILE] | --diff OLD NEW',
    summary:
      "the connections the policies allow between workloads (and to and from the outside world), per protocol and port, traced through each node's compiled rules; --diff: what a change opens and closes, exit 0 no change, 1 changes, 2 error",
    settings: [...clusterRuleset, ...manifests, ...daemonAddress],
    exits: [
      [0, 'the map is written; --diff: nothing opened or closed'],
      [1, '--diff: some connection opened or closed'],
      [2, "error, or --live could not read a node's flow log (after the map is written, naming the node)"],
    ],
    options: [
      OPT.resources,
      OPT.kubeconfig,
      OPT.context,
      { name: 'format', type: 'string', arg: 'html|svg|dot|md|json', help: 'output format (default md; --diff: md, json or text)' },
      { name: 'output', type: 'string', short: 'o', arg: 'FILE', help: 'write to FILE instead of standard output' },
      {
        name: 'family',
        type: 'string',
        arg: '4|6',
        help: 'IP family of the connections (default 4 when any pod has an IPv4 address, else 6)',
      },
      {
        name: 'group-by',
        type: 'string',
        arg: 'owner|labels|KEY',
        help: "what makes pods one workload, in a namespace: their controller (owner, the default: a Deployment, StatefulSet, DaemonSet, Job…; pods without one by their label set), their label set (labels), or one label's value (e.g. app); a workload whose pods the rules treat differently is drawn as several groups, and the map says why",
      },
      {
        name: 'diff',
        type: 'boolean',
        help: 'compare two clusters: --diff OLD NEW (each a manifest file or directory, or the word "cluster" for the API server), or --old PATH… --new PATH…',
      },
      {
        name: 'old',
        type: 'string',
        multiple: true,
        arg: 'PATH|cluster',
        help: '--diff: the cluster before the change (manifests, or "cluster")',
      },
      {
        name: 'new',
        type: 'string',
        multiple: true,
        arg: 'PATH|cluster',
        help: '--diff: the cluster after the change (manifests, or "cluster")',
      },
      {
        name: 'live',
        type: 'boolean',
        help: "also read each node's flow log (its daemon's /flows: drops, and audited policies' would-deny) and place every record on the pair of groups it belongs to, flagging those the map disagrees with: through --daemon-url, else the API server's pod proxy (where /flows answers 401: see docs/map.md)",
      },
      OPT.daemonUrl,
      OPT.daemonNamespace,
    ],
  },
  drops: {
    synopsis: '[--pod ns/name] [--namespace NS] [--policy ns/name] [--audit] [--follow]',
    summary: "show the connections this node's daemon denied, and why (its flow log, read from the daemon's /flows)",
    settings: daemonAddress,
    exits: [
      [0, 'printed (also when nothing was recorded)'],
      [2, "error, or a node's flow log could not be read (after the others are printed)"],
    ],
    options: [
      { name: 'pod', type: 'string', arg: 'NS/NAME', help: 'only flows to or from this pod' },
      { name: 'namespace', type: 'string', arg: 'NS', help: 'only flows to or from pods of this namespace' },
      {
        name: 'policy',
        type: 'string',
        arg: 'NS/NAME|NAME',
        help: "only drops at pods this NetworkPolicy selects (NS/NAME), or by this ClusterNetworkPolicy's Deny rules (NAME)",
      },
      {
        name: 'audit',
        type: 'boolean',
        help: 'instead of drops, the connections audited policies (netfence.io/mode: audit) would deny or allow',
      },
      { name: 'follow', type: 'boolean', short: 'f', help: 'keep printing new denied flows as they come' },
      {
        name: 'url',
        type: 'string',
        arg: 'URL',
        help: "the daemon's HTTP address (default: from listenAddress, a wildcard host becomes loopback)",
      },
      OPT.json,
      {
        ...OPT.kubeconfig,
        help: "collect from the daemons on the nodes that matter (the pod's node, the namespace's nodes, else every node) through this kubeconfig's API server (pod proxy; the daemons must listen on their node's address)",
      },
      OPT.context,
      {
        name: 'daemon-namespace',
        type: 'string',
        arg: 'NS',
        help: 'with --kubeconfig/--context: the namespace of the netfence DaemonSet (default kube-system)',
      },
    ],
  },
  cleanup: {
    synopsis: '',
    summary: 'remove every chain, rule and ipset netfence owns; touch nothing else',
    settings: [...kernel, ...log],
    exits: [[0, 'removed (also when there was nothing to remove)'], EXIT_ERROR],
    options: [OPT.netns],
  },
} as const satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof COMMANDS;

export const isCommandName = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);

/** Every option `netfence <name>` accepts, in help order: its own, then configuration, then --help. */
export function commandOptions(name: CommandName): readonly OptionDef[] {
  return [...COMMANDS[name].options, ...configOptions(COMMANDS[name].settings), HELP_OPTION];
}

/** The commands that take a setting's flag (`--revoke-established`: daemon, apply, compile, diff). */
function commandsReading(flag: string): CommandName[] {
  const key = CONFIG_KEYS.find((k) => configKeyOptions(k).some((d) => d.name === flag));
  return key === undefined
    ? []
    : (Object.keys(COMMANDS) as CommandName[]).filter((c) => (COMMANDS[c].settings as readonly ConfigKey[]).includes(key));
}

/** What to use instead of a setting a command does not read, where there is something. */
const INSTEAD: Readonly<Record<string, string>> = {
  'apply:dry-run': 'netfence diff shows what apply would change, without writing',
};

/**
 * Parses a command's arguments with exactly the options its help lists. Every error is one line: a
 * misspelt option gets "did you mean", another command's option names the commands that take it, and a
 * setting this command does not read names those that do.
 */
export function parseCommand(name: CommandName, argv: readonly string[]): Parsed {
  const accepted = commandOptions(name);
  const names = new Set(accepted.map((d) => d.name));
  // Every setting's flag parses, so one this command does not read is refused by name below.
  const all = [...accepted, ...CONFIG_OPTIONS.filter((d) => !names.has(d.name))];
  let parsed: Parsed;
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options: parserOptions(all), allowPositionals: false, strict: true });
    parsed = { values: values as Parsed['values'], positionals };
  } catch (err) {
    throw new UsageError(
      explainParseError(err, {
        command: `netfence ${name}`,
        argv,
        accepted,
        elsewhere: (option) =>
          (Object.keys(COMMANDS) as CommandName[]).filter(
            (c) => c !== name && COMMANDS[c].options.some((d: OptionDef) => d.name === option),
          ),
      }),
    );
  }
  for (const flag of Object.keys(parsed.values)) {
    if (names.has(flag)) continue;
    const readers = commandsReading(flag.replace(/^no-/, ''));
    const instead = INSTEAD[`${name}:${flag}`];
    throw new UsageError(
      `--${flag} is a setting netfence ${name} does not read${readers.length > 0 ? ` (read by: ${readers.join(', ')})` : ''}${instead ? `; ${instead}` : ''}`,
    );
  }
  return parsed;
}
