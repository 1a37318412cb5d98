// The daemon's configuration: its keys, defaults, how each key is spelled in the environment and on
// the command line, and the JSON Schema every layer (file, environment, flags) is checked against.

import { defaultDnsLearningSettings as DNS } from '../model/dns-egress.js';
import { DEFAULT_FLOW_LOG } from '../model/flow-log.js';
import { DEFAULT_MANIFEST_LIMITS } from '../model/manifest-limits.js';
import type { UnknownPodPolicy } from '../model/index.js';
import { DEFAULT_NODE_BUDGET } from '../model/node.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../log-levels.js';
import { DEFAULT_MARK_MASK } from './marks.js';

export const BACKENDS = ['auto', 'nft', 'legacy'] as const;
/** Which iptables binaries to drive; `auto` picks the one holding more rules, as kube-proxy's iptables-wrappers do. */
export type IptablesBackend = (typeof BACKENDS)[number];

export const UNKNOWN_POD_POLICIES = ['fail-closed', 'fail-open'] as const satisfies readonly UnknownPodPolicy[];

export interface DaemonConfig {
  readonly nodeName: string;
  readonly bridge: string;
  /** Pod CIDRs from configuration; when empty the daemon discovers them (Node spec, flannel subnet.env). */
  readonly podCidrs: readonly string[];
  readonly unknownPods: UnknownPodPolicy;
  readonly chainPrefix: string;
  readonly ipsetPrefix: string;
  /** The bits netfence may use in the packet mark; see marks.ts for how they are allocated. */
  readonly markMask: number;
  readonly backend: IptablesBackend;
  /** Program ip6tables as well when pods have IPv6 addresses. */
  readonly ipv6: boolean;
  /** Drift check period: the kernel is re-read and repaired at least this often. */
  readonly resyncIntervalSeconds: number;
  /** Informer events arriving within this window are folded into one sync. */
  readonly batchWindowMs: number;
  /**
   * How often the position of netfence's jumps in the kernel chains is checked (one rule read, not the
   * ruleset); a displaced jump triggers an immediate full resync. 0 turns the check off.
   */
  readonly hookCheckIntervalMs: number;
  /** Delete conntrack entries of flows that a new deny forbids (otherwise established flows survive). */
  readonly conntrackFlush: boolean;
  /**
   * Strict mode: flows the current rules would refuse stop carrying packets even when conntrack already
   * knows them (a ctmark bit plus a connmark DROP above the ESTABLISHED accepts). Off by default.
   */
  readonly revokeEstablished: boolean;
  /**
   * Bind each pod's bridge port to the pod's addresses (IPv4, IPv6, ARP) with an nft bridge table; ports
   * whose pod the CNI result cache does not name yet send nothing.
   */
  readonly antiSpoofing: boolean;
  /**
   * Write set member changes (the per-pod-change path) over the kernel's ipset netlink protocol, with no
   * process; off: every ipset step through `ipset restore`. A kernel that refuses netlink falls back by itself.
   */
  readonly ipsetNetlink: boolean;
  /** libcni's cache directory (`results/` inside names each pod's host veth and addresses). */
  readonly cniCacheDir: string;
  /** `host:port` serving /healthz, /readyz and /metrics. */
  readonly listenAddress: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** flannel's per-node lease file, read for this node's pod CIDR. */
  readonly flannelSubnetEnv: string;
  /**
   * `daemon --resources`: how often the manifest files' identity, size and times are compared with the
   * last read, so a change no file watch reported is still followed within this time.
   */
  readonly manifestCheckIntervalMs: number;
  /** `--resources`: a manifest file larger than this is not read (an error naming it; see ManifestLimits). */
  readonly manifestMaxFileBytes: number;
  /** `--resources`: the manifest files of one read together may not exceed this. */
  readonly manifestMaxTotalBytes: number;
  /** Log the plan and write nothing. */
  readonly dryRun: boolean;
  /** NFLOG before every drop of a new connection, read back by the daemon (flow log, `netfence drops`). */
  readonly flowLogs: boolean;
  /** netlink log group of those rules; one reader per group and network namespace. */
  readonly flowLogGroup: number;
  /** Logged packets per second per drop rule (`-m limit`); the rest are dropped unlogged. */
  readonly flowLogRate: number;
  /** Also log allowed new connections with the policy rule that allowed them (adds a rule per allow rule). */
  readonly flowLogAllowed: boolean;
  /**
   * Start each informer with a WatchList stream (`sendInitialEvents`, Kubernetes ≥ 1.32 with the WatchList gate)
   * instead of paged lists; a server that refuses it gets paged lists. The API server serves it from its watch
   * cache instead of building a list per node; on the wire it is uncompressed (BENCHMARKS.md, "API load").
   */
  readonly watchList: boolean;
  /**
   * A kind that can vanish (the ClusterNetworkPolicy CRD) answered 404: discovery is asked again this often,
   * and only three absent answers in a row end its enforcement. Meanwhile its last state stays enforced and
   * the node is not ready.
   */
  readonly apiGoneConfirmIntervalMs: number;
  /**
   * Node budget (model/node.ts NodeBudget): ipBlock set members (cidrs and excepts as written) all
   * NetworkPolicies together may make this node program, split fairly between namespaces (compile/budget.ts).
   * A namespace's policies past its share, newest first, fail closed.
   */
  readonly budgetSetMembers: number;
  /** Node budget: iptables rules of all NetworkPolicy chains together. */
  readonly budgetRules: number;
  /**
   * Bounds on each kind's initial state (a WatchList stream, or all pages of a list): objects, MiB of JSON,
   * and seconds for a stream. Past one, a stream falls back to paged lists and a list is retried with
   * backoff. Sized so a hostile server cannot take the daemon past the DaemonSet's memory limit.
   */
  readonly initialListMaxObjects: number;
  readonly initialListMaxMiB: number;
  readonly initialListTimeoutSeconds: number;
  /** Deadline of each list page (the API server's own --request-timeout is 60 s). */
  readonly listPageTimeoutSeconds: number;
  // Egress by DNS name (ClusterNetworkPolicy `domainNames`; model/dns-egress.ts DnsLearningSettings, docs/cluster-policy.md).
  /** NFQUEUE number the DNS answers to pods with `domainNames` egress are held on. */
  readonly dnsEgressQueueNum: number;
  /** NFLOG group those pods' DNS queries are copied to; not the flow-log group. */
  readonly dnsEgressNflogGroup: number;
  /** A learned address lives max(answer TTL, this), at most dnsEgressMaxTtlSeconds. */
  readonly dnsEgressMinTtlSeconds: number;
  readonly dnsEgressMaxTtlSeconds: number;
  /** Learned addresses per pod, rule and family (the set's maxelem). */
  readonly dnsEgressPerSetMax: number;
  /** Learned addresses on the node; past it new ones are refused. */
  readonly dnsEgressPerNodeMax: number;
  /** DNS queries per pod awaiting their answer. */
  readonly dnsEgressPendingPerPod: number;
  /** How long an answer may be held for its set writes before it is released ungranted. */
  readonly dnsEgressHoldDeadlineMs: number;
}

export type ConfigKey = keyof DaemonConfig;

/** How a key's value is written where only strings exist (environment, flags). */
export type KeyKind = 'string' | 'integer' | 'boolean' | 'string-list' | 'mark-mask';

export interface KeySpelling {
  readonly kind: KeyKind;
  /** Environment variables, lowest precedence first. */
  readonly env: readonly string[];
  /** Long flag without dashes. */
  readonly flag: string;
}

const spell = (kind: KeyKind, envSuffix: string, flag: string, extraEnv: readonly string[] = []): KeySpelling => ({
  kind,
  env: [...extraEnv, `NETFENCE_${envSuffix}`],
  flag,
});

export const KEY_SPELLINGS: { readonly [K in ConfigKey]: KeySpelling } = {
  // NODE_NAME is what the DaemonSet sets from the downward API (spec.nodeName).
  nodeName: spell('string', 'NODE_NAME', 'node-name', ['NODE_NAME']),
  bridge: spell('string', 'BRIDGE', 'bridge'),
  podCidrs: spell('string-list', 'POD_CIDRS', 'pod-cidr'),
  unknownPods: spell('string', 'UNKNOWN_PODS', 'unknown-pods'),
  chainPrefix: spell('string', 'CHAIN_PREFIX', 'chain-prefix'),
  ipsetPrefix: spell('string', 'IPSET_PREFIX', 'ipset-prefix'),
  markMask: spell('mark-mask', 'MARK_MASK', 'mark-mask'),
  backend: spell('string', 'BACKEND', 'backend'),
  ipv6: spell('boolean', 'IPV6', 'ipv6'),
  resyncIntervalSeconds: spell('integer', 'RESYNC_INTERVAL_SECONDS', 'resync-interval-seconds'),
  batchWindowMs: spell('integer', 'BATCH_WINDOW_MS', 'batch-window-ms'),
  hookCheckIntervalMs: spell('integer', 'HOOK_CHECK_INTERVAL_MS', 'hook-check-interval-ms'),
  conntrackFlush: spell('boolean', 'CONNTRACK_FLUSH', 'conntrack-flush'),
  revokeEstablished: spell('boolean', 'REVOKE_ESTABLISHED', 'revoke-established'),
  antiSpoofing: spell('boolean', 'ANTI_SPOOFING', 'anti-spoofing'),
  ipsetNetlink: spell('boolean', 'IPSET_NETLINK', 'ipset-netlink'),
  cniCacheDir: spell('string', 'CNI_CACHE_DIR', 'cni-cache-dir'),
  listenAddress: spell('string', 'LISTEN_ADDRESS', 'listen-address'),
  logLevel: spell('string', 'LOG_LEVEL', 'log-level'),
  logFormat: spell('string', 'LOG_FORMAT', 'log-format'),
  flannelSubnetEnv: spell('string', 'FLANNEL_SUBNET_ENV', 'flannel-subnet-env'),
  manifestCheckIntervalMs: spell('integer', 'MANIFEST_CHECK_INTERVAL_MS', 'manifest-check-interval-ms'),
  manifestMaxFileBytes: spell('integer', 'MANIFEST_MAX_FILE_BYTES', 'manifest-max-file-bytes'),
  manifestMaxTotalBytes: spell('integer', 'MANIFEST_MAX_TOTAL_BYTES', 'manifest-max-total-bytes'),
  dryRun: spell('boolean', 'DRY_RUN', 'dry-run'),
  flowLogs: spell('boolean', 'FLOW_LOGS', 'flow-logs'),
  flowLogGroup: spell('integer', 'FLOW_LOG_GROUP', 'flow-log-group'),
  flowLogRate: spell('integer', 'FLOW_LOG_RATE', 'flow-log-rate'),
  flowLogAllowed: spell('boolean', 'FLOW_LOG_ALLOWED', 'flow-log-allowed'),
  watchList: spell('boolean', 'WATCH_LIST', 'watch-list'),
  apiGoneConfirmIntervalMs: spell('integer', 'API_GONE_CONFIRM_INTERVAL_MS', 'api-gone-confirm-interval-ms'),
  budgetSetMembers: spell('integer', 'BUDGET_SET_MEMBERS', 'budget-set-members'),
  budgetRules: spell('integer', 'BUDGET_RULES', 'budget-rules'),
  initialListMaxObjects: spell('integer', 'INITIAL_LIST_MAX_OBJECTS', 'initial-list-max-objects'),
  initialListMaxMiB: spell('integer', 'INITIAL_LIST_MAX_MIB', 'initial-list-max-mib'),
  initialListTimeoutSeconds: spell('integer', 'INITIAL_LIST_TIMEOUT_SECONDS', 'initial-list-timeout-seconds'),
  listPageTimeoutSeconds: spell('integer', 'LIST_PAGE_TIMEOUT_SECONDS', 'list-page-timeout-seconds'),
  dnsEgressQueueNum: spell('integer', 'DNS_EGRESS_QUEUE_NUM', 'dns-egress-queue-num'),
  dnsEgressNflogGroup: spell('integer', 'DNS_EGRESS_NFLOG_GROUP', 'dns-egress-nflog-group'),
  dnsEgressMinTtlSeconds: spell('integer', 'DNS_EGRESS_MIN_TTL_SECONDS', 'dns-egress-min-ttl-seconds'),
  dnsEgressMaxTtlSeconds: spell('integer', 'DNS_EGRESS_MAX_TTL_SECONDS', 'dns-egress-max-ttl-seconds'),
  dnsEgressPerSetMax: spell('integer', 'DNS_EGRESS_PER_SET_MAX', 'dns-egress-per-set-max'),
  dnsEgressPerNodeMax: spell('integer', 'DNS_EGRESS_PER_NODE_MAX', 'dns-egress-per-node-max'),
  dnsEgressPendingPerPod: spell('integer', 'DNS_EGRESS_PENDING_PER_POD', 'dns-egress-pending-per-pod'),
  dnsEgressHoldDeadlineMs: spell('integer', 'DNS_EGRESS_HOLD_DEADLINE_MS', 'dns-egress-hold-deadline-ms'),
};

export const CONFIG_KEYS = Object.keys(KEY_SPELLINGS) as readonly ConfigKey[];

/** Names the config file path in the environment, as `--config` does on the command line. */
export const CONFIG_FILE_ENV = 'NETFENCE_CONFIG';

export const DEFAULT_CONFIG: Omit<DaemonConfig, 'nodeName'> = {
  bridge: 'cni0',
  podCidrs: [],
  // Fail closed; the reasoning is in model/node.ts defaultNodeSettings.
  unknownPods: 'fail-closed',
  chainPrefix: 'nf-',
  ipsetPrefix: 'nf',
  markMask: DEFAULT_MARK_MASK,
  backend: 'auto',
  ipv6: true,
  resyncIntervalSeconds: 30,
  batchWindowMs: 20,
  // kube-proxy re-prepends KUBE-FORWARD (which ACCEPTs masquerade-marked traffic) when it restarts; this
  // bounds how long it can sit above netfence. One `iptables -S FORWARD 1` costs ~10 ms.
  hookCheckIntervalMs: 1000,
  conntrackFlush: false,
  // "Implementation defined" by the spec; off keeps today's behaviour (see README, strict mode).
  revokeEstablished: false,
  antiSpoofing: true,
  ipsetNetlink: true,
  cniCacheDir: '/var/lib/cni',
  // The node's loopback: on the host network any pod can reach a port bound to 0.0.0.0. Exposing it to a
  // scraper is an explicit choice (docs/operations.md "Scraping /metrics").
  listenAddress: '127.0.0.1:9476',
  logLevel: 'info',
  logFormat: 'json',
  flannelSubnetEnv: '/run/flannel/subnet.env',
  // A stat of each manifest file: cheap enough to bound a missed change to a few seconds.
  manifestCheckIntervalMs: 5000,
  manifestMaxFileBytes: DEFAULT_MANIFEST_LIMITS.maxFileBytes,
  manifestMaxTotalBytes: DEFAULT_MANIFEST_LIMITS.maxTotalBytes,
  dryRun: false,
  flowLogs: true,
  flowLogGroup: DEFAULT_FLOW_LOG.group,
  flowLogRate: DEFAULT_FLOW_LOG.perSecond,
  flowLogAllowed: false,
  watchList: true,
  // Three absent answers 5 s apart: a restarting API server or aggregation layer is back well within that.
  apiGoneConfirmIntervalMs: 5000,
  budgetSetMembers: DEFAULT_NODE_BUDGET.setMembers,
  budgetRules: DEFAULT_NODE_BUDGET.rules,
  // Why these values, and the daemon's peak memory at them: DEFAULT_INITIAL_STATE_LIMITS in
  // cluster/kube-source-options.ts and docs/hostile-input.md.
  initialListMaxObjects: 100_000,
  initialListMaxMiB: 1024,
  initialListTimeoutSeconds: 120,
  listPageTimeoutSeconds: 60,
  // Why these values: docs/dns-egress-design.md, "Bounds".
  dnsEgressQueueNum: DNS.queueNum,
  dnsEgressNflogGroup: DNS.nflogGroup,
  dnsEgressMinTtlSeconds: DNS.minTtlSeconds,
  dnsEgressMaxTtlSeconds: DNS.maxTtlSeconds,
  dnsEgressPerSetMax: DNS.perSetMax,
  dnsEgressPerNodeMax: DNS.perNodeMax,
  dnsEgressPendingPerPod: DNS.pendingPerPod,
  dnsEgressHoldDeadlineMs: DNS.holdDeadlineMs,
};

/** Readable hints for `pattern` failures, which ajv would report as a bare regular expression. */
export const PATTERN_HINTS: Partial<Record<ConfigKey, string>> = {
  nodeName: 'must be a DNS subdomain (lowercase letters, digits, "-" and ".")',
  bridge: 'must be a Linux interface name (up to 15 characters, no "/", ":" or spaces)',
  chainPrefix: 'must be letters, digits and "-" only',
  ipsetPrefix: 'must be letters and digits only',
};

/**
 * One layer of configuration. Every key is optional (defaults fill the rest) and unknown keys are
 * errors, so a typo in a ConfigMap fails loudly instead of silently keeping a default.
 * Formats `cidr` and `listen-address` are registered by load.ts.
 */
export const CONFIG_LAYER_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    nodeName: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
    },
    bridge: { type: 'string', minLength: 1, maxLength: 15, pattern: '^[^/:\\s]*$' },
    podCidrs: { type: 'array', items: { type: 'string', format: 'cidr' }, uniqueItems: true },
    unknownPods: { type: 'string', enum: [...UNKNOWN_POD_POLICIES] },
    // Chains are ≤ 28 characters; a short prefix leaves room for the hash that keeps names unique.
    chainPrefix: { type: 'string', minLength: 1, maxLength: 6, pattern: '^[a-zA-Z0-9-]+$' },
    // Sets are ≤ 31 characters and the family/kind tag (`4s:`) follows the prefix.
    ipsetPrefix: { type: 'string', minLength: 1, maxLength: 4, pattern: '^[a-zA-Z0-9]+$' },
    // A number, or a string such as "0xffff0000"; bit rules are checked in marks.ts.
    markMask: { type: ['integer', 'string'] },
    backend: { type: 'string', enum: [...BACKENDS] },
    ipv6: { type: 'boolean' },
    resyncIntervalSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
    batchWindowMs: { type: 'integer', minimum: 0, maximum: 60000 },
    hookCheckIntervalMs: { type: 'integer', minimum: 0, maximum: 60000 },
    conntrackFlush: { type: 'boolean' },
    revokeEstablished: { type: 'boolean' },
    antiSpoofing: { type: 'boolean' },
    ipsetNetlink: { type: 'boolean' },
    cniCacheDir: { type: 'string', minLength: 1 },
    listenAddress: { type: 'string', format: 'listen-address' },
    logLevel: { type: 'string', enum: [...LOG_LEVELS] },
    logFormat: { type: 'string', enum: [...LOG_FORMATS] },
    flannelSubnetEnv: { type: 'string', minLength: 1 },
    manifestCheckIntervalMs: { type: 'integer', minimum: 100, maximum: 600000 },
    manifestMaxFileBytes: { type: 'integer', minimum: 1 },
    manifestMaxTotalBytes: { type: 'integer', minimum: 1 },
    dryRun: { type: 'boolean' },
    flowLogs: { type: 'boolean' },
    flowLogGroup: { type: 'integer', minimum: 0, maximum: 65535 },
    flowLogRate: { type: 'integer', minimum: 1, maximum: 10000 },
    flowLogAllowed: { type: 'boolean' },
    watchList: { type: 'boolean' },
    apiGoneConfirmIntervalMs: { type: 'integer', minimum: 100, maximum: 600000 },
    budgetSetMembers: { type: 'integer', minimum: 0, maximum: 10_000_000 },
    budgetRules: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    initialListMaxObjects: { type: 'integer', minimum: 1 },
    initialListMaxMiB: { type: 'integer', minimum: 1, maximum: 65536 },
    initialListTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600 },
    listPageTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600 },
    dnsEgressQueueNum: { type: 'integer', minimum: 0, maximum: 65535 },
    dnsEgressNflogGroup: { type: 'integer', minimum: 0, maximum: 65535 },
    // ipset's own limit on a timeout is 2147483 s (about 24 days).
    dnsEgressMinTtlSeconds: { type: 'integer', minimum: 0, maximum: 86_400 },
    dnsEgressMaxTtlSeconds: { type: 'integer', minimum: 1, maximum: 2_147_483 },
    dnsEgressPerSetMax: { type: 'integer', minimum: 1, maximum: 1_048_576 },
    dnsEgressPerNodeMax: { type: 'integer', minimum: 1, maximum: 10_000_000 },
    dnsEgressPendingPerPod: { type: 'integer', minimum: 1, maximum: 65_536 },
    dnsEgressHoldDeadlineMs: { type: 'integer', minimum: 1, maximum: 10_000 },
  },
} as const;
