// The command-line options, defined once: the parser (node:util parseArgs) and `--help` are both
// generated from these definitions, so help cannot forget a flag the parser accepts.
//
// This module is what `netfence --help` loads, so it imports only plain values (no ajv, winston or
// Kubernetes client).

import type { ParseArgsConfig } from 'node:util';
import {
  BACKENDS,
  CONFIG_FILE_ENV,
  CONFIG_KEYS,
  DEFAULT_CONFIG,
  KEY_SPELLINGS,
  UNKNOWN_POD_POLICIES,
  type ConfigKey,
} from '../config/schema.js';
import { LOG_FORMATS, LOG_LEVELS } from '../log-levels.js';

export { CommandFailure, UsageError } from '../commands/errors.js';

export interface OptionDef {
  /** Long name without dashes. */
  readonly name: string;
  readonly type: 'string' | 'boolean';
  readonly multiple?: boolean;
  readonly short?: string;
  /** Placeholder of a string option's value in help (`PATH`, `N`). */
  readonly arg?: string;
  readonly help: string;
}

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  readonly values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  readonly positionals: string[];
}

/** The parseArgs options of a list of definitions. */
export function parserOptions(defs: readonly OptionDef[]): Options {
  const options: Options = {};
  for (const d of defs) {
    options[d.name] = {
      type: d.type,
      ...(d.multiple ? { multiple: true } : {}),
      ...(d.short !== undefined ? { short: d.short } : {}),
    };
  }
  return options;
}

// ---- configuration flags (config/schema.ts spells them; the help words live here) -----------------

const CONFIG_HELP: { readonly [K in ConfigKey]: { readonly arg?: string; readonly help: string } } = {
  nodeName: { arg: 'N', help: 'this node' },
  bridge: { arg: 'IF', help: 'the bridge pods are attached to' },
  podCidrs: {
    arg: 'CIDR',
    help: "this node's pod CIDR (or several, comma-separated; default: the Node's spec.podCIDRs, then flannel's subnet.env)",
  },
  unknownPods: {
    arg: UNKNOWN_POD_POLICIES.join('|'),
    help: "addresses of this node's pod CIDR that no known pod owns: dropped, or let through",
  },
  chainPrefix: { arg: 'P', help: 'prefix of the chains netfence owns' },
  ipsetPrefix: { arg: 'P', help: 'prefix of the ipsets netfence owns' },
  markMask: { arg: 'MASK', help: 'packet mark bits netfence may use (e.g. 0xffff0000)' },
  backend: { arg: BACKENDS.join('|'), help: 'iptables backend; auto picks the one kubelet and kube-proxy use' },
  ipv6: { help: 'program ip6tables too (compile: print the IPv6 payload)' },
  resyncIntervalSeconds: { arg: 'S', help: 'drift check period: the kernel is re-read and repaired at least this often' },
  batchWindowMs: { arg: 'MS', help: 'change syncs start at least this far apart (a lone event is programmed at once; a burst folds)' },
  conntrackFlush: { help: 'delete conntrack entries of flows a new deny forbids' },
  listenAddress: { arg: 'HOST:PORT', help: 'where /healthz, /readyz and /metrics are served' },
  logLevel: { arg: LOG_LEVELS.join('|'), help: 'log level' },
  logFormat: { arg: LOG_FORMATS.join('|'), help: 'log format' },
  flannelSubnetEnv: { arg: 'FILE', help: "flannel's lease file, read for this node's pod CIDR" },
  manifestCheckIntervalMs: {
    arg: 'MS',
    help: 'daemon --resources: how often the manifest files are compared with the last read (catches a change no file event reported)',
  },
  manifestMaxFileBytes: { arg: 'BYTES', help: '--resources: a manifest file larger than this is refused (an error naming it), not read' },
  manifestMaxTotalBytes: { arg: 'BYTES', help: '--resources: the manifest files of one read may not exceed this together' },
  dryRun: { help: 'log the plan and write nothing' },
  hookCheckIntervalMs: {
    arg: 'MS',
    help: 'how often netfence checks its FORWARD jump is still first (kube-proxy re-prepends KUBE-FORWARD on restart); 0: off',
  },
  revokeEstablished: { help: 'strict mode: established flows a new deny refuses stop carrying packets (conntrack mark + DROP)' },
  antiSpoofing: { help: "bind each pod's bridge port to its addresses (IPv4/IPv6 source, ARP sender) with an nft bridge table" },
  ipsetNetlink: { help: 'write set member changes over the ipset netlink protocol (no process per change); else ipset restore' },
  cniCacheDir: { arg: 'DIR', help: "libcni's cache directory, read to learn which bridge port belongs to which pod" },
  flowLogs: { help: 'send a rate-limited NFLOG copy of every denied new connection to the daemon (flow logs, netfence drops)' },
  flowLogGroup: { arg: 'N', help: 'the NFLOG group the flow-log rules use and the daemon reads' },
  flowLogRate: { arg: 'N', help: 'flow-log packets per second per drop rule (a flood cannot flood the log)' },
  flowLogAllowed: { help: 'also log allowed new connections, naming the policy rule that allowed each' },
  watchList: { help: 'start with WatchList streams (sendInitialEvents) where the API server allows them, else paged lists' },
  apiGoneConfirmIntervalMs: {
    arg: 'MS',
    help: 'after a 404 for the ClusterNetworkPolicy API, discovery is asked this often; three absent answers in a row drop its policies',
  },
  budgetSetMembers: { arg: 'N', help: 'ipBlock set members (cidrs and excepts) all NetworkPolicies may make this node program' },
  budgetRules: { arg: 'N', help: 'iptables rules all NetworkPolicy chains may hold on this node' },
  initialListMaxObjects: { arg: 'N', help: "objects one kind's initial stream or list may carry before it is refused" },
  initialListMaxMiB: { arg: 'MIB', help: "MiB of JSON one kind's initial stream or list may carry before it is refused" },
  initialListTimeoutSeconds: { arg: 'S', help: 'deadline of a WatchList stream; past it, paged lists are used instead' },
  listPageTimeoutSeconds: { arg: 'S', help: 'deadline of each list page (refused and retried past it)' },
  dnsEgressQueueNum: { arg: 'N', help: 'domainNames egress: the NFQUEUE number DNS answers to watched pods are held on' },
  dnsEgressNflogGroup: {
    arg: 'N',
    help: "domainNames egress: the NFLOG group watched pods' DNS queries are copied to (not the flow-log group)",
  },
  dnsEgressMinTtlSeconds: { arg: 'S', help: 'domainNames egress: a learned address lives max(answer TTL, this) seconds' },
  dnsEgressMaxTtlSeconds: { arg: 'S', help: 'domainNames egress: a learned address lives at most this long, whatever the answer says' },
  dnsEgressPerSetMax: { arg: 'N', help: 'domainNames egress: learned addresses per pod, rule and family (more are refused)' },
  dnsEgressPerNodeMax: { arg: 'N', help: 'domainNames egress: learned addresses on this node (more are refused)' },
  dnsEgressPendingPerPod: { arg: 'N', help: 'domainNames egress: DNS queries per pod awaiting their answer' },
  dnsEgressHoldDeadlineMs: {
    arg: 'MS',
    help: 'domainNames egress: an answer held longer than this for its set writes is released, granting nothing',
  },
};

function defaultText(key: ConfigKey): string {
  if (key === 'nodeName') return '';
  const value = DEFAULT_CONFIG[key];
  if (Array.isArray(value) && value.length === 0) return '';
  if (key === 'markMask') return `; default 0x${(value as number).toString(16)}`;
  return `; default ${String(value)}`;
}

const CONFIG_FILE_OPTION: OptionDef = {
  name: 'config',
  type: 'string',
  arg: 'FILE',
  help: `YAML or JSON configuration file (env ${CONFIG_FILE_ENV}); flags win over env NETFENCE_*, which wins over the file`,
};

/** A configuration key's flags (booleans also as `--no-…`), as config/load.ts reads them. */
export function configKeyOptions(key: ConfigKey): readonly OptionDef[] {
  const { kind, flag, env } = KEY_SPELLINGS[key];
  const { arg, help } = CONFIG_HELP[key];
  const text = `${help} (env ${env.join(', ')}${defaultText(key)})`;
  if (kind === 'boolean') {
    return [
      { name: flag, type: 'boolean', help: text },
      { name: `no-${flag}`, type: 'boolean', help: `turn --${flag} off` },
    ];
  }
  return [{ name: flag, type: 'string', ...(kind === 'string-list' ? { multiple: true } : {}), arg: arg ?? 'VALUE', help: text }];
}

/** `--config` and the flags of the given configuration keys (every key when none are given), in CONFIG_KEYS order. */
export function configOptions(keys: readonly ConfigKey[] = CONFIG_KEYS): readonly OptionDef[] {
  return [CONFIG_FILE_OPTION, ...CONFIG_KEYS.filter((k) => keys.includes(k)).flatMap(configKeyOptions)];
}

/** `--config` and one flag per configuration key (booleans also as `--no-…`), as config/load.ts reads them. */
export const CONFIG_OPTIONS: readonly OptionDef[] = configOptions();

// ---- which configuration each command reads ------------------------------------------------------
// A command is given only the flags of the settings it reads, so `why --revoke-established` or
// `apply --dry-run` is refused instead of accepted and ignored. The file and NETFENCE_* environment may
// hold every setting (the DaemonSet's ConfigMap serves `kubectl exec … netfence diff` too).

/** Groups of settings, each read by one piece of the commands' plumbing (cli/context.ts, config/views.ts). */
export const SETTING_GROUPS = {
  /** What a node's ruleset is compiled from (config/load.ts toNodeSettings, cli/context.ts nodeSettings). */
  ruleset: [
    'nodeName',
    'bridge',
    'podCidrs',
    'unknownPods',
    'chainPrefix',
    'ipsetPrefix',
    'markMask',
    'revokeEstablished',
    'flannelSubnetEnv',
    'flowLogs',
    'flowLogGroup',
    'flowLogRate',
    'flowLogAllowed',
    'budgetSetMembers',
    'budgetRules',
    'dnsEgressQueueNum',
    'dnsEgressNflogGroup',
    'dnsEgressMinTtlSeconds',
    'dnsEgressPerSetMax',
  ],
  /** Egress by DNS name: the compiler's part is in `ruleset`; the DNS agent reads all of them (model/dns-egress.ts). */
  dnsEgress: [
    'dnsEgressQueueNum',
    'dnsEgressNflogGroup',
    'dnsEgressMinTtlSeconds',
    'dnsEgressMaxTtlSeconds',
    'dnsEgressPerSetMax',
    'dnsEgressPerNodeMax',
    'dnsEgressPendingPerPod',
    'dnsEgressHoldDeadlineMs',
  ],
  /** Which kernel objects and tools (config/views.ts kernelOptions, ownershipOf). */
  kernel: ['backend', 'ipv6', 'chainPrefix', 'ipsetPrefix'],
  /** Bounds of a `--resources` read (config/views.ts manifestLimits). */
  manifests: ['manifestMaxFileBytes', 'manifestMaxTotalBytes'],
  /**
   * The level of the commands' loggers (cli/context.ts cliLogger). Every command that works on a node takes it,
   * with the kernel group, so one set of flags serves a script's apply, diff, inspect, trace and cleanup.
   */
  log: ['logLevel'],
  /** Where the daemon's HTTP endpoints are (`drops`, `why --live`). */
  daemonAddress: ['listenAddress'],
  every: CONFIG_KEYS,
} as const satisfies Record<string, readonly ConfigKey[]>;

// ---- the options of the commands ------------------------------------------------------------------

export const HELP_OPTION: OptionDef = { name: 'help', type: 'boolean', short: 'h', help: 'this help' };

export const OPT = {
  resources: {
    name: 'resources',
    type: 'string',
    multiple: true,
    arg: 'PATH',
    help: 'a manifest file or directory (*.yaml, *.yml, *.json) to read instead of the API server',
  },
  kubeconfig: {
    name: 'kubeconfig',
    type: 'string',
    arg: 'FILE',
    help: 'read the cluster from the API server of this kubeconfig (default: in-cluster configuration)',
  },
  context: { name: 'context', type: 'string', arg: 'NAME', help: 'the kubeconfig context to use (default: its current context)' },
  netns: { name: 'netns', type: 'string', arg: 'NAME', help: 'act inside this named network namespace (tests, sandbox)' },
  saved: {
    name: 'saved',
    type: 'string',
    multiple: true,
    arg: 'FILE',
    help: 'read iptables-save and/or ip6tables-save + ipset save output (or `netfence compile` output) instead of the live kernel; each *filter table\'s family is told from its "# Generated by ip6tables-save" line (or its addresses)',
  },
  json: { name: 'json', type: 'boolean', help: 'print JSON' },
  // `why --live` and `map --live`: how each node's daemon is reached.
  daemonUrl: {
    name: 'daemon-url',
    type: 'string',
    multiple: true,
    arg: 'NODE=URL',
    help: "--live: this node's daemon is at URL (e.g. n1=http://10.0.0.1:9476)",
  },
  daemonNamespace: {
    name: 'daemon-namespace',
    type: 'string',
    arg: 'NS',
    help: '--live through the API: the namespace of the netfence DaemonSet (default kube-system)',
  },
} as const satisfies Record<string, OptionDef>;
