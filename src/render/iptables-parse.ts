// `iptables-save` text → tables, chains and rules; our own rules also back into structured Rules.
// Foreign rules are kept as raw lines: we read them only to leave them alone (and to show them).

import type { Action, ChainName, ConntrackState, IpSetName, Match, MatchProtocol, PortRange, Rule, SetDirection } from '../model/index.js';
import { DEFAULT_LIMIT_BURST, HASH_PREFIX } from './iptables-render.js';
import { canonicalRuleForm } from './rule-form.js';
import type { RuleRecord } from './rule-record.js';
import { tokenize } from './tokenize.js';

export interface SavedRule extends RuleRecord {
  readonly args: readonly string[];
  /** The human part of our comment. */
  readonly comment?: string;
  /** The structured rule, when every part of it is something netfence emits. */
  readonly rule?: Rule | undefined;
  /** Packet and byte counters, when the dump was taken with `iptables-save -c`. */
  readonly counters?: RuleCounters;
}

export interface RuleCounters {
  readonly packets: number;
  readonly bytes: number;
}

export interface SavedChain {
  readonly name: string;
  /** `ACCEPT`/`DROP` for built-in chains, `-` for user chains. */
  readonly policy: string;
  readonly rules: SavedRule[];
}

export interface SavedTable {
  readonly name: string;
  readonly chains: Map<string, SavedChain>;
}

export class SaveParseError extends Error {
  override readonly name = 'SaveParseError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`iptables-save input line ${line}: ${message}`);
  }
}

export function parseIptablesSave(text: string): Map<string, SavedTable> {
  const tables = new Map<string, SavedTable>();
  let table: SavedTable | undefined;
  const lines = text.split('\n');
  // A plain loop and no closure per line: this runs unoptimised in the one-shot commands.
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    // trimEnd only where it can remove something (a copy of every line otherwise).
    const last = raw.charCodeAt(raw.length - 1);
    const line = last <= 32 || last === 0xa0 || last >= 0x1680 ? raw.trimEnd() : raw;
    const n = i + 1;
    if (line === '' || line.startsWith('#')) continue;
    if (table && line.startsWith('-A ')) {
      addRule(table, line, n, undefined);
      continue;
    }
    if (line.startsWith('*')) {
      if (table) throw new SaveParseError(n, `table ${line} starts before ${table.name} was COMMITted`);
      table = { name: line.slice(1), chains: new Map() };
      tables.set(table.name, table);
      continue;
    }
    if (!table) throw new SaveParseError(n, `"${line.slice(0, 60)}" outside any *table section (not iptables-save output?)`);
    if (line === 'COMMIT') {
      table = undefined;
      continue;
    }
    if (line.startsWith(':')) {
      const [name, policy] = line.slice(1).split(' ');
      if (!name || !policy) throw new SaveParseError(n, `bad chain declaration "${line}"`);
      table.chains.set(name, { name, policy, rules: [] });
      continue;
    }
    // `iptables-save -c` puts the rule's counters first: `[packets:bytes] -A …`.
    const counted = line.startsWith('[') ? /^\[(\d+):(\d+)\] (-A .*)$/.exec(line) : null;
    if (!counted) throw new SaveParseError(n, `unexpected line "${line.slice(0, 60)}"`);
    addRule(table, counted[3]!, n, { packets: Number(counted[1]), bytes: Number(counted[2]) });
  }
  if (table) {
    const last = lines.reduce((n, l, i) => (l.trim() !== '' ? i + 1 : n), 0);
    throw new SaveParseError(last, `table ${table.name} has no COMMIT (truncated dump?)`);
  }
  return tables;
}

function addRule(table: SavedTable, ruleLine: string, n: number, counters: RuleCounters | undefined): void {
  let args: string[];
  try {
    args = tokenize(ruleLine);
  } catch (e) {
    throw new SaveParseError(n, (e as Error).message);
  }
  const chain = table.chains.get(args[1] ?? '');
  if (!chain) throw new SaveParseError(n, `rule for undeclared chain "${args[1]}"`);
  chain.rules.push(parseSavedRule(ruleLine.slice(3 + args[1]!.length + 1), args.slice(2), counters));
}

export function parseSavedRule(text: string, args: readonly string[], counters?: RuleCounters): SavedRule {
  let commentAt = args.indexOf('--comment');
  while (commentAt >= 0 && !args[commentAt + 1]?.startsWith(HASH_PREFIX)) commentAt = args.indexOf('--comment', commentAt + 1);
  // The canonical form is read on first use: a drift check compares texts first and seldom needs it.
  let form: string | undefined;
  const formOf = () => (form ??= canonicalRuleForm(args));
  if (commentAt < 0)
    return {
      text,
      args,
      ...(counters ? { counters } : {}),
      get form() {
        return formOf();
      },
    };
  const full = args[commentAt + 1]!.slice(HASH_PREFIX.length);
  const space = full.indexOf(' ');
  const hash = space < 0 ? full : full.slice(0, space);
  const comment = space < 0 ? undefined : full.slice(space + 1);
  // The structured form is parsed on first use: a drift check compares texts and never needs it.
  let rule: Rule | undefined | null = null;
  return {
    text,
    args,
    hash,
    ...(comment !== undefined ? { comment } : {}),
    ...(counters ? { counters } : {}),
    get rule() {
      if (rule === null) rule = toRule(args, comment);
      return rule;
    },
    get form() {
      return formOf();
    },
  };
}

/**
 * One `-A <chain> <rule>` line as `iptables -S` prints it, its chain and its rule parsed; undefined for anything
 * else (a `-P` policy line, an unterminated quote).
 */
export function parseRuleLine(line: string): { readonly chain: string; readonly rule: SavedRule } | undefined {
  const head = /^-A (\S+) /.exec(line);
  if (!head) return undefined;
  const text = line.slice(head[0].length);
  try {
    return { chain: head[1]!, rule: parseSavedRule(text, tokenize(text)) };
  } catch {
    return undefined;
  }
}

/** `-j X` / `-g X` target of a saved rule, from its arguments. */
export function targetOf(args: readonly string[]): { readonly flag: '-j' | '-g'; readonly target: string } | undefined {
  for (let i = args.length - 2; i >= 0; i--) {
    if ((args[i] === '-j' || args[i] === '-g') && args[i - 1] !== '--comment')
      return { flag: args[i] as '-j' | '-g', target: args[i + 1]! };
  }
  return undefined;
}

/** Structured form of a rule netfence wrote; undefined if it contains anything we never emit. */
export function toRule(args: readonly string[], comment?: string): Rule | undefined {
  const match: Match[] = [];
  let action: Action | undefined;
  let i = 0;
  const next = (): string | undefined => args[i++];
  while (i < args.length) {
    const negate = args[i] === '!';
    if (negate) i++;
    const a = next();
    const v = (): string => {
      const value = next();
      if (value === undefined) throw new Error(`${a} needs a value`);
      return value;
    };
    try {
      switch (a) {
        case '-s':
          match.push({ kind: 'src-net', cidr: v(), ...(negate ? { negate } : {}) });
          break;
        case '-d':
          match.push({ kind: 'dst-net', cidr: v(), ...(negate ? { negate } : {}) });
          break;
        case '-i':
          match.push({ kind: 'in-iface', name: v(), ...(negate ? { negate } : {}) });
          break;
        case '-o':
          match.push({ kind: 'out-iface', name: v(), ...(negate ? { negate } : {}) });
          break;
        case '-p': {
          const p = v();
          if (p !== 'tcp' && p !== 'udp' && p !== 'sctp' && p !== 'ipv6-icmp') return undefined;
          match.push({ kind: 'protocol', protocol: p as MatchProtocol });
          break;
        }
        case '-m': {
          const m = parseModule(v(), args, i);
          if (!m) return undefined;
          i = m.next;
          if (m.match) match.push(m.match);
          break;
        }
        case '-j':
        case '-g': {
          const t = parseTarget(a, v(), args, i);
          if (!t) return undefined;
          action = t.action;
          i = t.next;
          break;
        }
        default:
          return undefined;
      }
    } catch {
      return undefined;
    }
  }
  if (!action) return undefined;
  return { match, action, ...(comment !== undefined ? { comment } : {}) };
}

function parseModule(name: string, args: readonly string[], start: number): { match?: Match; next: number } | undefined {
  let i = start;
  const negate = args[i] === '!';
  if (negate) i++;
  const opt = args[i];
  switch (name) {
    case 'comment':
      return opt === '--comment' ? { next: i + 2 } : undefined;
    case 'tcp':
    case 'udp':
    case 'sctp':
      // `-p tcp -m tcp` with no further option: the implicit protocol module.
      return { next: start };
    case 'multiport': {
      if ((opt !== '--dports' && opt !== '--sports') || negate) return undefined;
      const ports = parsePorts(args[i + 1] ?? '');
      return ports && { match: { kind: opt === '--dports' ? 'dports' : 'sports', ports }, next: i + 2 };
    }
    case 'set': {
      const set = args[i + 1];
      const direction = args[i + 2] as SetDirection | undefined;
      if (opt !== '--match-set' || !set || !direction || !['src', 'dst', 'src,src', 'dst,dst'].includes(direction)) return undefined;
      return { match: { kind: 'set', set: set as IpSetName, direction, ...(negate ? { negate } : {}) }, next: i + 3 };
    }
    case 'mark': {
      const mark = parseMark(args[i + 1]);
      return opt === '--mark' && mark ? { match: { kind: 'mark', ...mark, ...(negate ? { negate } : {}) }, next: i + 2 } : undefined;
    }
    case 'icmp6': {
      // iptables-save prints the type as a number (`--icmpv6-type 135`), never by name or with a code.
      const type = /^\d+$/.test(args[i + 1] ?? '') ? Number(args[i + 1]) : undefined;
      return opt === '--icmpv6-type' && !negate && type !== undefined ? { match: { kind: 'icmpv6-type', type }, next: i + 2 } : undefined;
    }
    case 'hl': {
      const value = /^\d+$/.test(args[i + 1] ?? '') ? Number(args[i + 1]) : undefined;
      return opt === '--hl-eq' && !negate && value !== undefined ? { match: { kind: 'hop-limit', value }, next: i + 2 } : undefined;
    }
    case 'connmark': {
      const mark = parseMark(args[i + 1]);
      return opt === '--mark' && mark ? { match: { kind: 'connmark', ...mark, ...(negate ? { negate } : {}) }, next: i + 2 } : undefined;
    }
    case 'conntrack': {
      const dir = args[i + 1];
      if (opt === '--ctdir' && !negate && (dir === 'ORIGINAL' || dir === 'REPLY'))
        return { match: { kind: 'ctdir', direction: dir }, next: i + 2 };
      if (opt !== '--ctstate' || negate) return undefined;
      const states = (args[i + 1] ?? '').split(',') as ConntrackState[];
      return { match: { kind: 'ctstate', states }, next: i + 2 };
    }
    case 'physdev': {
      let inName: string | undefined;
      let outName: string | undefined;
      let isBridged = false;
      for (;;) {
        if (args[i] === '--physdev-in') {
          inName = args[i + 1];
          i += 2;
        } else if (args[i] === '--physdev-out') {
          outName = args[i + 1];
          i += 2;
        } else if (args[i] === '--physdev-is-bridged') {
          isBridged = true;
          i += 1;
        } else break;
      }
      const match: Match = {
        kind: 'physdev',
        ...(inName ? { in: inName } : {}),
        ...(outName ? { out: outName } : {}),
        ...(isBridged ? { isBridged } : {}),
      };
      return { match, next: i };
    }
    case 'limit': {
      const rate = /^(\d+)\/sec$/.exec(args[i + 1] ?? '');
      if (opt !== '--limit' || !rate) return undefined;
      const burst = args[i + 2] === '--limit-burst' ? Number(args[i + 3]) : DEFAULT_LIMIT_BURST;
      if (!Number.isInteger(burst)) return undefined;
      return { match: { kind: 'limit', perSecond: Number(rate[1]), burst }, next: args[i + 2] === '--limit-burst' ? i + 4 : i + 2 };
    }
    default:
      return undefined;
  }
}

function parseTarget(flag: string, target: string, args: readonly string[], i: number): { action: Action; next: number } | undefined {
  if (flag === '-g') return { action: { kind: 'goto', target: target as ChainName }, next: i };
  switch (target) {
    case 'ACCEPT':
      return { action: { kind: 'accept' }, next: i };
    case 'DROP':
      return { action: { kind: 'drop' }, next: i };
    case 'RETURN':
      return { action: { kind: 'return' }, next: i };
    case 'REJECT':
      return { action: { kind: 'reject' }, next: args[i] === '--reject-with' ? i + 2 : i };
    case 'MARK': {
      const mark = args[i] === '--set-xmark' ? parseMark(args[i + 1]) : undefined;
      return mark && { action: { kind: 'set-mark', ...mark }, next: i + 2 };
    }
    case 'NFLOG': {
      if (args[i] !== '--nflog-prefix' || args[i + 1] === undefined) return undefined;
      const prefix = args[i + 1]!;
      let at = i + 2;
      const group = args[at] === '--nflog-group' ? Number(args[at + 1]) : 0;
      if (args[at] === '--nflog-group') at += 2;
      const threshold = args[at] === '--nflog-threshold' ? Number(args[at + 1]) : undefined;
      if (threshold !== undefined) at += 2;
      if (!Number.isInteger(group) || (threshold !== undefined && !Number.isInteger(threshold))) return undefined;
      return { action: { kind: 'nflog', group, prefix, ...(threshold !== undefined ? { threshold } : {}) }, next: at };
    }
    case 'NFQUEUE': {
      const queue = args[i] === '--queue-num' ? Number(args[i + 1]) : undefined;
      if (queue === undefined || !Number.isInteger(queue) || args[i + 2] !== '--queue-bypass') return undefined;
      return { action: { kind: 'nfqueue', queue }, next: i + 3 };
    }
    default:
      return /^[A-Z]+$/.test(target) ? undefined : { action: { kind: 'jump', target: target as ChainName }, next: i };
  }
}

function parseMark(text: string | undefined): { value: number; mask: number } | undefined {
  // iptables-save omits the mask when it is all ones.
  const m = /^(0x[0-9a-f]+)(?:\/(0x[0-9a-f]+))?$/i.exec(text ?? '');
  return m ? { value: Number(m[1]), mask: m[2] === undefined ? 0xffffffff : Number(m[2]) } : undefined;
}

function parsePorts(text: string): PortRange[] | undefined {
  const ranges = text.split(',').map((p) => {
    const [a, b] = p.split(':');
    return { from: Number(a), to: Number(b ?? a) };
  });
  return ranges.every((r) => Number.isInteger(r.from) && Number.isInteger(r.to)) ? ranges : undefined;
}
