// Rules → iptables argument lists and restore text, in exactly the form `iptables-save` prints them
// (addresses, interfaces and protocol first, then our hash comment, then the other matches, then the
// target), so a saved line usually equals the rendered one byte for byte: the drift check's fast path. A
// rule printed another way is compared by hash and meaning instead (plan/rule-identity.ts).

import {
  sha256 as sha256Of,
  type Action,
  type Chain,
  type FamilyState,
  type Hook,
  type Match,
  type PortRange,
  type Rule,
} from '../model/index.js';
import { ruleRecord, type RuleRecord } from './rule-record.js';

export const HASH_PREFIX = 'nf:';
const HASH_LENGTH = 16;

const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;
// As iptables-save prints it: a full mask is left out.
const markArg = (value: number, mask: number): string => (mask >>> 0 === 0xffffffff ? hex(value) : `${hex(value)}/${hex(mask)}`);
/** xt_limit's default burst, which iptables-save does not print. */
export const DEFAULT_LIMIT_BURST = 5;
const CONNTRACK_ORDER = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED'] as const;

/** iptables-save prints these as options before any `-m` module. */
const OPTION_KINDS = ['src-net', 'dst-net', 'in-iface', 'out-iface', 'protocol'] as const;
type OptionKind = (typeof OPTION_KINDS)[number];

const not = (negate: boolean | undefined): string[] => (negate ? ['!'] : []);

const renderMatch: { [K in Match['kind']]: (m: Extract<Match, { kind: K }>) => string[] } = {
  'src-net': (m) => [...not(m.negate), '-s', m.cidr],
  'dst-net': (m) => [...not(m.negate), '-d', m.cidr],
  'in-iface': (m) => [...not(m.negate), '-i', m.name],
  'out-iface': (m) => [...not(m.negate), '-o', m.name],
  protocol: (m) => ['-p', m.protocol],
  dports: (m) => ['-m', 'multiport', '--dports', portList(m.ports)],
  sports: (m) => ['-m', 'multiport', '--sports', portList(m.ports)],
  set: (m) => ['-m', 'set', ...not(m.negate), '--match-set', m.set, m.direction],
  mark: (m) => ['-m', 'mark', ...not(m.negate), '--mark', markArg(m.value, m.mask)],
  ctstate: (m) => ['-m', 'conntrack', '--ctstate', CONNTRACK_ORDER.filter((s) => m.states.includes(s)).join(',')],
  ctdir: (m) => ['-m', 'conntrack', '--ctdir', m.direction],
  physdev: (m) => [
    '-m',
    'physdev',
    ...(m.in !== undefined ? ['--physdev-in', m.in] : []),
    ...(m.out !== undefined ? ['--physdev-out', m.out] : []),
    ...(m.isBridged ? ['--physdev-is-bridged'] : []),
  ],
  'icmpv6-type': (m) => ['-m', 'icmp6', '--icmpv6-type', `${m.type}`],
  'hop-limit': (m) => ['-m', 'hl', '--hl-eq', `${m.value}`],
  connmark: (m) => ['-m', 'connmark', ...not(m.negate), '--mark', markArg(m.value, m.mask)],
  // iptables-save leaves out the default burst of 5.
  limit: (m) => [
    '-m',
    'limit',
    '--limit',
    `${m.perSecond}/sec`,
    ...(m.burst !== DEFAULT_LIMIT_BURST ? ['--limit-burst', `${m.burst}`] : []),
  ],
};

const renderAction: { [K in Action['kind']]: (a: Extract<Action, { kind: K }>) => string[] } = {
  accept: () => ['-j', 'ACCEPT'],
  drop: () => ['-j', 'DROP'],
  reject: () => ['-j', 'REJECT', '--reject-with', 'icmp-port-unreachable'],
  return: () => ['-j', 'RETURN'],
  jump: (a) => ['-j', a.target],
  goto: (a) => ['-g', a.target],
  'set-mark': (a) => ['-j', 'MARK', '--set-xmark', markArg(a.value, a.mask)],
  // iptables-save prints the prefix before the group and leaves out group 0.
  nflog: (a) => [
    '-j',
    'NFLOG',
    '--nflog-prefix',
    a.prefix,
    ...(a.group !== 0 ? ['--nflog-group', `${a.group}`] : []),
    ...(a.threshold !== undefined ? ['--nflog-threshold', `${a.threshold}`] : []),
  ],
  nfqueue: (a) => ['-j', 'NFQUEUE', '--queue-num', `${a.queue}`, '--queue-bypass'],
};

const portList = (ports: readonly PortRange[]): string => ports.map((r) => (r.from === r.to ? `${r.from}` : `${r.from}:${r.to}`)).join(',');

const matchArgs = (m: Match): string[] => (renderMatch[m.kind] as (m: Match) => string[])(m);
const actionArgs = (a: Action): string[] => (renderAction[a.kind] as (a: Action) => string[])(a);
const isOption = (m: Match): m is Extract<Match, { kind: OptionKind }> => (OPTION_KINDS as readonly string[]).includes(m.kind);

const pushAll = (out: string[], args: readonly string[]): void => {
  for (let i = 0; i < args.length; i++) out.push(args[i]!);
};

/**
 * The rule's option arguments (iptables-save prints them first, in OPTION_KINDS order), and its module
 * and target arguments in the rule's own order. Plain loops: the one-shot commands run this unoptimised.
 */
function renderParts(rule: Rule): { options: string[]; modules: string[] } {
  const options: string[] = [];
  const modules: string[] = [];
  const match = rule.match;
  // By kind in OPTION_KINDS order; two of one kind keep the rule's order.
  for (let k = 0; k < OPTION_KINDS.length; k++)
    for (let i = 0; i < match.length; i++) if (match[i]!.kind === OPTION_KINDS[k]) pushAll(options, matchArgs(match[i]!));
  for (let i = 0; i < match.length; i++) if (!isOption(match[i]!)) pushAll(modules, matchArgs(match[i]!));
  pushAll(modules, actionArgs(rule.action));
  return { options, modules };
}

/** The rule's arguments without the comment: what its hash covers. */
export function ruleArgs(rule: Rule): string[] {
  const { options, modules } = renderParts(rule);
  pushAll(options, modules);
  return options;
}

// Felix escapeComment: keep comments to a safe alphabet so quoting never has to escape anything.
export function sanitizeComment(text: string): string {
  return text.replace(/[^\w @%+=:,./-]/g, '_').slice(0, 240);
}

/** The rule's full argument list as iptables-save prints it after `-A <chain>`. */
export function ruleArgsWithComment(rule: Rule, hash: string): string[] {
  const { options, modules } = renderParts(rule);
  options.push('-m', 'comment', '--comment', sanitizeComment(`${HASH_PREFIX}${hash}${rule.comment ? ` ${rule.comment}` : ''}`));
  pushAll(options, modules);
  return options;
}

// xtables_save_string: a string of only these characters is printed bare, anything else in double quotes.
const BARE_STRING = /^[A-Za-z0-9_-]+$/;

/** Quote like iptables-save: comments always in double quotes, NFLOG prefixes when xtables would, everything else bare. */
export function joinArgs(args: readonly string[]): string {
  let out = '';
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const before = i > 0 ? args[i - 1] : undefined;
    const quoted = before === '--comment' || (before === '--nflog-prefix' && !BARE_STRING.test(a));
    out += i === 0 ? (quoted ? `"${a}"` : a) : quoted ? ` "${a}"` : ` ${a}`;
  }
  return out;
}

/**
 * Felix RuleHashes: h0 = H(chain), h_i = H(h_{i-1} + rule_i); a rule's hash depends on every rule before
 * it, so one saved hash sequence proves the whole chain is as we wrote it.
 */
export function ruleHashes(chain: string, rules: readonly Rule[]): string[] {
  return chainedHashes(
    chain,
    rules.map((rule) => joinArgs(ruleArgs(rule))),
  );
}

/** The hash chain over each rule's argument text (ruleArgs joined). */
function chainedHashes(chain: string, ruleTexts: readonly string[]): string[] {
  let prev = sha256(chain);
  const out: string[] = [];
  for (let i = 0; i < ruleTexts.length; i++) {
    prev = sha256(prev + ruleTexts[i]!);
    out.push(prev.slice(0, HASH_LENGTH));
  }
  return out;
}

const sha256 = (text: string): string => sha256Of(text, 'base64url');

/** Hooks are hashed on their own (not chained): they sit among foreign rules we do not control. */
export const hookHash = (hook: Hook): string => ruleHashes(`${hook.chain}*hook`, [hook.rule])[0]!;

export interface RenderedChain {
  readonly name: string;
  /** Each rule exactly as iptables-save prints it after `-A <chain>`, with its hash. */
  readonly rules: readonly RuleRecord[];
}

// joinArgs builds a text piece by piece, which V8 keeps as a rope, and comparing a rope walks it on every compare.
// Sliced off a fresh concatenation it is one flat string: the drift check's one string compare per rule stays one.
const flat = (text: string): string => (' ' + text).slice(1);

// Chains are immutable values; the compiler hands back the same object while a chain is unchanged, so a
// chain is hashed and rendered once however many plans and trackers look at it.
const rendered = new WeakMap<Chain, RenderedChain>();

export function renderChain(chain: Chain): RenderedChain {
  let out = rendered.get(chain);
  if (!out) {
    out = renderChainUncached(chain);
    rendered.set(chain, out);
  }
  return out;
}

function renderChainUncached(chain: Chain): RenderedChain {
  // Each rule's matches are split and rendered once, for its hash and for its line.
  const rules = chain.rules;
  const parts: { options: string[]; modules: string[] }[] = [];
  const texts: string[] = [];
  for (let i = 0; i < rules.length; i++) {
    const p = renderParts(rules[i]!);
    parts.push(p);
    texts.push(joinArgs(p.options.concat(p.modules)));
  }
  const hashes = chainedHashes(chain.name, texts);
  const records: RuleRecord[] = [];
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    const comment = sanitizeComment(`${HASH_PREFIX}${hashes[i]!}${rule.comment ? ` ${rule.comment}` : ''}`);
    const args = parts[i]!.options.concat(['-m', 'comment', '--comment', comment], parts[i]!.modules);
    records.push(ruleRecord(flat(joinArgs(args)), hashes[i]));
  }
  return { name: chain.name, rules: records };
}

const renderedHooks = new WeakMap<Hook, RuleRecord>();

/** The hook's rule as iptables-save prints it after `-A <chain>`, with its hash. */
export function renderHook(hook: Hook): RuleRecord {
  let out = renderedHooks.get(hook);
  if (!out) {
    const hash = hookHash(hook);
    renderedHooks.set(hook, (out = ruleRecord(flat(joinArgs(ruleArgsWithComment(hook.rule, hash))), hash)));
  }
  return out;
}

// ---- restore text: every line netfence hands to iptables-restore is written by one of these ----------

/**
 * `:<chain> - [0:0]`: creates the chain, or flushes it when it exists (restore --noflush). With a policy
 * (`ACCEPT`, `DROP`) it is a built-in chain's header as iptables-save prints it.
 */
export const declareChainLine = (chain: string, policy = '-'): string => `:${chain} ${policy} [0:0]`;
/** `-X <chain>`: deletes an (already flushed, unreferenced) chain. */
export const deleteChainLine = (chain: string): string => `-X ${chain}`;
/** `-A <chain> <rule>`, `-I <chain> 1 <rule>` (top of the chain) or `-D <chain> <rule>`. */
export function ruleLine(edit: 'append' | 'insert-first' | 'delete', chain: string, rule: string): string {
  switch (edit) {
    case 'append':
      return `-A ${chain} ${rule}`;
    case 'insert-first':
      return `-I ${chain} 1 ${rule}`;
    case 'delete':
      return `-D ${chain} ${rule}`;
  }
}
/** A rendered chain's rules as `-A <chain> <rule>` lines. */
export const appendLines = (chain: RenderedChain): string[] => chain.rules.map((r) => ruleLine('append', chain.name, r.text));
/** One filter-table transaction around `lines`; '' when there is nothing to write. */
export const filterTransaction = (lines: readonly string[]): string =>
  lines.length > 0 ? ['*filter', ...lines, 'COMMIT', ''].join('\n') : '';

/** Everything a family needs, as one `iptables-restore --noflush` input that programs it from scratch. */
export function renderFullRestore(state: FamilyState): string {
  const chains = state.chains.map(renderChain);
  const out = [...chains.map((c) => declareChainLine(c.name)), ...chains.flatMap(appendLines)];
  for (const hook of state.hooks)
    out.push(ruleLine(hook.position === 'insert' ? 'insert-first' : 'append', hook.chain, renderHook(hook).text));
  return filterTransaction(out);
}
