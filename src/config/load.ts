// Builds the daemon's configuration from, lowest precedence first: defaults, the config file
// (`--config F` or NETFENCE_CONFIG), the environment (NODE_NAME, NETFENCE_*), and flags.
// Each layer is validated on its own so every error names where the bad value came from.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ParseArgsConfig } from 'node:util';
import type * as AjvModule from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type * as Yaml from 'yaml';
import { DEFAULT_FLOW_LOG, type ClusterSnapshot, type DnsLearningSettings, type NodeSettings } from '../model/index.js';
import { canonicalCidr, isCidr } from '../model/address.js';
import { editDistance } from './edit-distance.js';
import { layerFits, type Formats } from './fits-schema.js';
import { parseListenAddress } from './listen-address.js';
import { allocateMarks, hex, markMaskProblems, parseMarkMask, revokeBit } from './marks.js';
import {
  CONFIG_FILE_ENV,
  CONFIG_KEYS,
  CONFIG_LAYER_SCHEMA,
  DEFAULT_CONFIG,
  KEY_SPELLINGS,
  PATTERN_HINTS,
  type ConfigKey,
  type DaemonConfig,
  type KeyKind,
} from './schema.js';

/** Every problem found, each prefixed with its source and JSON path. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Values as `node:util` parseArgs returns them (kebab-case names). Keys that are not config flags are ignored. */
export type FlagValues = Readonly<Record<string, string | boolean | readonly (string | boolean)[] | undefined>>;

export interface ConfigFileInput {
  readonly path: string;
  readonly text: string;
}

export interface LoadConfigInput {
  readonly argvFlags?: FlagValues;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The config file's contents. When absent, the file named by `--config` or NETFENCE_CONFIG is read. */
  readonly file?: ConfigFileInput;
  /** The daemon needs a node name; offline commands (`diff`, `inspect`) may not. Default true. */
  readonly requireNodeName?: boolean;
}

/** Config flags in `node:util` parseArgs form; booleans also get `--no-<flag>` (parseArgs on Node 20 has no negation). */
export const CONFIG_FLAG_OPTIONS: NonNullable<ParseArgsConfig['options']> = configFlagOptions();

function configFlagOptions(): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = { config: { type: 'string' } };
  for (const key of CONFIG_KEYS) {
    const { kind, flag } = KEY_SPELLINGS[key];
    if (kind === 'boolean') {
      options[flag] = { type: 'boolean' };
      options[`no-${flag}`] = { type: 'boolean' };
    } else {
      options[flag] = kind === 'string-list' ? { type: 'string', multiple: true } : { type: 'string' };
    }
  }
  return options;
}

export function loadConfig(input: LoadConfigInput): { config: DaemonConfig } {
  const env = input.env ?? {};
  const flags = input.argvFlags ?? {};
  const problems: string[] = [];
  const layers: Layer[] = [];

  const file = input.file ?? readNamedFile(flags, env, problems);
  if (file) layers.push(fileLayer(file, problems));
  layers.push(envLayer(env, problems), flagLayer(flags, problems));
  for (const layer of layers) problems.push(...validateLayer(layer));
  if (problems.length > 0) throw new ConfigError(problems);

  const merged: Record<string, unknown> = { ...DEFAULT_CONFIG };
  for (const layer of layers) Object.assign(merged, layer.values);
  if (input.requireNodeName !== false && merged['nodeName'] === undefined) {
    const [nodeEnv] = KEY_SPELLINGS.nodeName.env;
    throw new ConfigError([`/nodeName: is required (set --node-name, ${nodeEnv}, or nodeName in the config file)`]);
  }
  merged['markMask'] = parseMarkMask(merged['markMask']);
  if (merged['revokeEstablished'] === true && revokeBit(merged['markMask'] as number) === undefined) {
    throw new ConfigError([
      `/markMask: revokeEstablished needs a fifth bit in the mark mask ${hex(merged['markMask'] as number)} for its conntrack mark`,
    ]);
  }
  merged['nodeName'] ??= '';
  return { config: merged as unknown as DaemonConfig };
}

/** Where a node's pod CIDRs may be learned besides configuration and its Node object; absent ones are skipped. */
export interface LearnedPodCidrs {
  /** flannel's subnet.env lease. */
  readonly flannel?: readonly string[];
  /** The ranges the programmed dispatch chains fail-close (trace reads a ruleset, not a lease). */
  readonly programmed?: readonly string[];
}

/**
 * This node's pod CIDRs, the one place their precedence is decided: configured CIDRs win (an operator who
 * sets them means it), then the Node object's spec.podCIDRs (the API's word), then flannel's subnet.env (the
 * lease file may be stale), then what the programmed ruleset shows. Without any, unknown local pods cannot
 * be recognised.
 */
export function podCidrsOf(
  config: Pick<DaemonConfig, 'podCidrs' | 'nodeName'>,
  snapshot: ClusterSnapshot | undefined,
  learned: LearnedPodCidrs = {},
): readonly string[] {
  const fromNode = snapshot?.nodes.find((n) => n.name === config.nodeName)?.podCidrs ?? [];
  const sources = [config.podCidrs, fromNode, learned.flannel ?? [], learned.programmed ?? []];
  return sources.find((cidrs) => cidrs.length > 0) ?? [];
}

/**
 * The compiler's view of this node, with the pod CIDRs podCidrsOf chose. CIDRs are canonicalized (host
 * bits cleared) and de-duplicated.
 */
export function toNodeSettings(config: DaemonConfig, podCidrs: readonly string[]): NodeSettings {
  const canonical = podCidrs.map((text) => {
    const parsed = canonicalCidr(text);
    if (!parsed) throw new ConfigError([`pod CIDR "${text}" is not a CIDR`]);
    return parsed.cidr;
  });
  return {
    nodeName: config.nodeName,
    bridge: config.bridge,
    podCidrs: [...new Set(canonical)],
    unknownPods: config.unknownPods,
    chainPrefix: config.chainPrefix,
    ipsetPrefix: config.ipsetPrefix,
    marks: allocateMarks(config.markMask),
    ...(config.revokeEstablished ? { revokeMark: revokeMarkOf(config.markMask) } : {}),
    budget: { setMembers: config.budgetSetMembers, rules: config.budgetRules },
    dnsEgress: dnsEgressOf(config),
    flowLog: config.flowLogs
      ? {
          group: config.flowLogGroup,
          perSecond: config.flowLogRate,
          burst: DEFAULT_FLOW_LOG.burst,
          ...(config.flowLogAllowed ? { allowed: true } : {}),
        }
      : undefined,
  };
}

/** The `dnsEgress*` keys as the compiler and the DNS agent read them, with the checks across keys. */
function dnsEgressOf(config: DaemonConfig): DnsLearningSettings {
  const errors: string[] = [];
  if (config.dnsEgressMinTtlSeconds > config.dnsEgressMaxTtlSeconds)
    errors.push(
      `/dnsEgressMinTtlSeconds: ${config.dnsEgressMinTtlSeconds} is above dnsEgressMaxTtlSeconds ${config.dnsEgressMaxTtlSeconds}`,
    );
  // One reader per group and namespace: the flow log's reader would take the queries, or the other way round.
  if (config.flowLogs && config.dnsEgressNflogGroup === config.flowLogGroup)
    errors.push(`/dnsEgressNflogGroup: ${config.dnsEgressNflogGroup} is the flow-log group; each needs its own NFLOG group`);
  if (errors.length > 0) throw new ConfigError(errors);
  return {
    queueNum: config.dnsEgressQueueNum,
    nflogGroup: config.dnsEgressNflogGroup,
    minTtlSeconds: config.dnsEgressMinTtlSeconds,
    maxTtlSeconds: config.dnsEgressMaxTtlSeconds,
    perSetMax: config.dnsEgressPerSetMax,
    perNodeMax: config.dnsEgressPerNodeMax,
    pendingPerPod: config.dnsEgressPendingPerPod,
    holdDeadlineMs: config.dnsEgressHoldDeadlineMs,
  };
}

function revokeMarkOf(mask: number): number {
  const bit = revokeBit(mask);
  if (bit === undefined)
    throw new ConfigError([`/markMask: revokeEstablished needs a fifth bit in the mark mask ${hex(mask)} for its conntrack mark`]);
  return bit;
}

// ---- layers ------------------------------------------------------------------------------------

interface Layer {
  readonly values: Record<string, unknown>;
  /** Names the origin of a key's value in error messages. */
  readonly origin: (key: string) => string;
}

function readNamedFile(flags: FlagValues, env: LoadConfigInput['env'] & object, problems: string[]): ConfigFileInput | undefined {
  const fromFlag = flags['config'];
  const path = typeof fromFlag === 'string' ? fromFlag : nonEmpty(env[CONFIG_FILE_ENV]);
  if (path === undefined) return undefined;
  try {
    return { path, text: readFileSync(path, 'utf8') };
  } catch (err) {
    problems.push(`config file ${path}: cannot read: ${(err as Error).message}`);
    return undefined;
  }
}

function fileLayer(file: ConfigFileInput, problems: string[]): Layer {
  const origin = (): string => `config file ${file.path}`;
  // The YAML parser is loaded only when there is a config file (~20 ms of every command start).
  const { LineCounter, parseDocument } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  const lineCounter = new LineCounter();
  const doc = parseDocument(file.text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  // Only the first syntax error: the ones after it are usually the parser losing its footing.
  const [syntax] = doc.errors;
  if (syntax) {
    problems.push(`${origin()}: line ${lineCounter.linePos(syntax.pos[0]).line}: ${syntax.message}`);
    return { values: {}, origin };
  }
  const parsed: unknown = doc.toJS();
  if (parsed === null || parsed === undefined) return { values: {}, origin }; // an empty file sets nothing
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.push(`${origin()}: /: must be a mapping of settings`);
    return { values: {}, origin };
  }
  return { values: parsed as Record<string, unknown>, origin };
}

function envLayer(env: Readonly<Record<string, string | undefined>>, problems: string[]): Layer {
  const values: Record<string, unknown> = {};
  const source: Record<string, string> = {};
  const known = new Set<string>([CONFIG_FILE_ENV]);
  for (const key of CONFIG_KEYS) {
    const { kind, env: names } = KEY_SPELLINGS[key];
    // Later names win: NETFENCE_NODE_NAME overrides the downward API's NODE_NAME.
    for (const name of names) {
      known.add(name);
      // An empty variable is treated as unset, as shells and manifests often leave them.
      const raw = nonEmpty(env[name]);
      if (raw === undefined) continue;
      values[key] = coerce(kind, raw);
      source[key] = name;
    }
  }
  // A misspelt NETFENCE_ variable would otherwise be ignored without a word.
  for (const name of Object.keys(env).sort()) {
    if (name.startsWith('NETFENCE_') && !known.has(name)) problems.push(`environment ${name}: unknown setting${suggest(name, [...known])}`);
  }
  return { values, origin: (key) => `environment ${source[key] ?? KEY_SPELLINGS[key as ConfigKey]?.env.at(-1) ?? ''}` };
}

function flagLayer(flags: FlagValues, problems: string[]): Layer {
  const values: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) {
    const { kind, flag } = KEY_SPELLINGS[key];
    const raw = flags[flag];
    if (kind === 'boolean') {
      const negated = flags[`no-${flag}`] === true;
      if (raw === true && negated) problems.push(`flag --${flag}: conflicts with --no-${flag}`);
      else if (raw !== undefined) values[key] = typeof raw === 'string' ? coerce(kind, raw) : raw;
      else if (negated) values[key] = false;
    } else if (raw !== undefined) {
      const list = (Array.isArray(raw) ? raw : [raw]).map(String);
      values[key] = kind === 'string-list' ? list.flatMap(splitList) : coerce(kind, list.at(-1) ?? '');
    }
  }
  return { values, origin: (key) => `flag --${KEY_SPELLINGS[key as ConfigKey]?.flag ?? key}` };
}

// Strings from the environment and flags become the JSON types the schema checks. A value that does
// not convert stays a string, so the schema reports it ("must be integer") with its origin.
function coerce(kind: KeyKind, raw: string): unknown {
  switch (kind) {
    case 'integer':
      return /^[+-]?\d+$/.test(raw.trim()) ? Number(raw) : raw;
    case 'boolean': {
      const word = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(word)) return true;
      if (['false', '0', 'no', 'off'].includes(word)) return false;
      return raw;
    }
    case 'string-list':
      return splitList(raw);
    case 'string':
    case 'mark-mask':
      return raw;
  }
}

const splitList = (raw: string): string[] =>
  raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');

const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value === '' ? undefined : value);

// ---- validation ---------------------------------------------------------------------------------

const FORMATS: Formats = { cidr: isCidr, 'listen-address': (text) => parseListenAddress(text) !== undefined };

let validateSchema: ValidateFunction | undefined;

/** ajv, loaded and compiled only for a layer layerFits cannot pass (it words the errors). */
function schemaValidator(): ValidateFunction {
  if (!validateSchema) {
    const { Ajv } = createRequire(import.meta.url)('ajv') as typeof AjvModule;
    // validateSchema off: checking the schema against the JSON Schema meta-schema compiles that too;
    // strict mode still rejects unknown keywords, and the unit tests compile it.
    const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, validateSchema: false });
    for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
    validateSchema = ajv.compile(CONFIG_LAYER_SCHEMA);
  }
  return validateSchema;
}

function validateLayer(layer: Layer): string[] {
  const problems: string[] = [];
  const validate = layerFits(CONFIG_LAYER_SCHEMA, layer.values, FORMATS) ? undefined : schemaValidator();
  if (validate && !validate(layer.values)) {
    for (const err of validate.errors ?? []) {
      const { path, reason } = describe(err);
      problems.push(`${layer.origin(topKey(path))}: ${path}: ${reason}`);
    }
  }
  // Bit rules the schema cannot say: how many bits, and which ones are kube-proxy's.
  const mask = layer.values['markMask'];
  if (mask !== undefined && (typeof mask === 'number' || typeof mask === 'string')) {
    const value = parseMarkMask(mask);
    const reasons = value === undefined ? ['must be a number or a hex string such as "0xffff0000"'] : markMaskProblems(value);
    for (const reason of reasons) problems.push(`${layer.origin('markMask')}: /markMask: ${reason}`);
  }
  return problems;
}

const topKey = (path: string): string => path.split('/')[1] ?? '';

function describe(err: ErrorObject): { path: string; reason: string } {
  const path = err.instancePath || '/';
  const params = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'additionalProperties': {
      const name = String(params['additionalProperty']);
      return { path: `${err.instancePath}/${name}`, reason: `unknown key${suggest(name, CONFIG_KEYS)}` };
    }
    case 'enum':
      return { path, reason: `must be one of: ${(params['allowedValues'] as unknown[]).join(', ')}` };
    case 'format':
      return params['format'] === 'cidr'
        ? { path, reason: 'must be a CIDR such as 10.244.1.0/24 or fd00:10:244:1::/64' }
        : { path, reason: 'must be host:port such as 0.0.0.0:9476 or [::]:9476' };
    case 'pattern':
      return { path, reason: PATTERN_HINTS[topKey(path) as ConfigKey] ?? err.message ?? 'is invalid' };
    default:
      return { path, reason: err.message ?? 'is invalid' };
  }
}

// "did you mean …": case-insensitive match, or an edit distance of at most 2.
function suggest(name: string, candidates: readonly string[]): string {
  const lower = name.toLowerCase();
  const best = candidates.find((c) => c.toLowerCase() === lower) ?? candidates.find((c) => editDistance(c.toLowerCase(), lower) <= 2);
  return best === undefined ? '' : ` (did you mean ${best}?)`;
}
