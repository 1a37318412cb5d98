// A saved rule's meaning, independent of how one iptables release prints it: two argument lists with the
// same canonical form make the kernel do the same thing. The drift check compares this form, not the
// printed text, so a release that orders matches differently, spaces or quotes them differently, or
// prints a module's default is no change, while an edited option, set, target or address still is.
//
// What is made irrelevant, and why it is safe:
// - the order of the address/interface/protocol options: the kernel tests them together, before any match;
// - the place of a comment (it matches every packet), and the order of stateless matches (set, conntrack,
//   mark, …): a conjunction of pure tests. A match with state (limit, and any module not listed as
//   stateless) keeps its place, since whether it counts a packet depends on the matches before it;
// - the order of one module's options, and of the items of a list option (`--ctstate`, `--dports`);
// - defaults a module may or may not print (`--limit-burst 5`, `--nflog-group 0`, `--reject-with
//   icmp-port-unreachable`, a full mark mask, `--update-counters`), and the protocol module `-p tcp` loads
//   implicitly (`-m tcp` with no option), a `/32` or `/128` left off an address, and a header option
//   that matches every packet (`-s 0.0.0.0/0`, `-s ::/0`, `-p all`, `-i +`). Only when not negated: the
//   negation of a match-everything option matches nothing (`! -s 0.0.0.0/0`, `! -i +`), so it is kept
//   like any other negation, and a rule edited so can never compare equal to the rule we wrote;
// - packet counters (`-c <packets> <bytes>`).
// Anything not understood is kept verbatim and in place: an unknown print is a change, never ignored.

import type { Action, Match } from '../model/index.js';

/** Address, interface and protocol options, by every spelling iptables accepts, to their short form. */
const HEADER_OPTIONS: Readonly<Record<string, string>> = {
  '-s': '-s',
  '--source': '-s',
  '--src': '-s',
  '-d': '-d',
  '--destination': '-d',
  '--dst': '-d',
  '-i': '-i',
  '--in-interface': '-i',
  '-o': '-o',
  '--out-interface': '-o',
  '-p': '-p',
  '--protocol': '-p',
};

const PROTOCOL_NAMES: Readonly<Record<string, string>> = {
  '1': 'icmp',
  '6': 'tcp',
  '17': 'udp',
  '132': 'sctp',
  '58': 'ipv6-icmp',
  icmpv6: 'ipv6-icmp',
};

/** How the canonical form reads a module netfence writes: its name, and what its options mean. */
interface ModuleForm {
  /** The `-m <module>` or `-j <TARGET>` name iptables prints. */
  readonly name: string;
  /** It only tests the packet or connection: its place among the other such matches cannot change a verdict. */
  readonly stateless?: true;
  /** Options whose value is a list in which order means nothing. */
  readonly lists?: readonly string[];
  /** Options whose value is `value[/mask]`, a missing mask meaning all ones. */
  readonly marks?: readonly string[];
  /** `option value` the module may or may not print: its default, left out of the form. */
  readonly defaults?: readonly string[];
}

/** An address, interface or protocol option: tested before any match (HEADER_OPTIONS reads every spelling). */
interface HeaderForm {
  readonly header: '-s' | '-d' | '-i' | '-o' | '-p';
}

// One entry per kind of match and target netfence renders (render/iptables-render.ts): a kind added to
// `Match` or `Action` does not compile until this reader says how its prints compare.
const MATCH_FORMS: { readonly [K in Match['kind']]: ModuleForm | HeaderForm } = {
  'src-net': { header: '-s' },
  'dst-net': { header: '-d' },
  'in-iface': { header: '-i' },
  'out-iface': { header: '-o' },
  protocol: { header: '-p' },
  'icmpv6-type': { name: 'icmp6', stateless: true },
  'hop-limit': { name: 'hl', stateless: true },
  dports: { name: 'multiport', stateless: true, lists: ['--dports'] },
  sports: { name: 'multiport', stateless: true, lists: ['--sports'] },
  set: { name: 'set', stateless: true, defaults: ['--update-counters', '--update-subcounters'] },
  mark: { name: 'mark', stateless: true, marks: ['--mark'] },
  ctstate: { name: 'conntrack', stateless: true, lists: ['--ctstate'] },
  ctdir: { name: 'conntrack', stateless: true },
  physdev: { name: 'physdev', stateless: true },
  connmark: { name: 'connmark', stateless: true, marks: ['--mark'] },
  // Stateful: whether it counts a packet depends on the matches before it.
  limit: { name: 'limit', defaults: ['--limit-burst 5'] },
};

/** Jumps and gotos name a chain: nothing but the name to compare. */
const CHAIN_TARGET: ModuleForm = { name: '' };

const ACTION_FORMS: { readonly [K in Action['kind']]: ModuleForm } = {
  accept: { name: 'ACCEPT' },
  drop: { name: 'DROP' },
  reject: { name: 'REJECT', defaults: ['--reject-with icmp-port-unreachable', '--reject-with icmp6-port-unreachable'] },
  return: { name: 'RETURN' },
  jump: CHAIN_TARGET,
  goto: CHAIN_TARGET,
  'set-mark': { name: 'MARK', marks: ['--set-xmark'] },
  nflog: { name: 'NFLOG', defaults: ['--nflog-group 0'] },
  nfqueue: { name: 'NFQUEUE', defaults: ['--queue-num 0'] },
};

/** Modules netfence never writes that an operator's or another release's print may hold, read as precisely. */
const OTHER_MODULES: readonly ModuleForm[] = [
  { name: 'tcp', stateless: true, lists: ['--ports'] },
  { name: 'udp', stateless: true },
  { name: 'sctp', stateless: true },
  { name: 'icmp', stateless: true },
  { name: 'state', stateless: true, lists: ['--state'] },
  { name: 'ttl', stateless: true },
  { name: 'addrtype', stateless: true },
  { name: 'iprange', stateless: true },
  { name: 'mac', stateless: true },
  { name: 'pkttype', stateless: true },
  { name: 'length', stateless: true },
  // multiport's other spellings.
  { name: 'multiport', stateless: true, lists: ['--destination-ports', '--source-ports'] },
];

const MODULES: readonly ModuleForm[] = [
  ...Object.values<ModuleForm | HeaderForm>(MATCH_FORMS).filter((f): f is ModuleForm => 'name' in f),
  ...Object.values(ACTION_FORMS),
  ...OTHER_MODULES,
];

/** Matches that only test the packet or connection: their order in a rule cannot change a verdict. */
const STATELESS_MODULES: ReadonlySet<string> = new Set(MODULES.filter((m) => m.stateless).map((m) => m.name));
/** Options whose value is a list in which order means nothing. */
const LIST_OPTIONS: ReadonlySet<string> = new Set(MODULES.flatMap((m) => m.lists ?? []));
const OPTION_ALIASES: Readonly<Record<string, string>> = { '--destination-ports': '--dports', '--source-ports': '--sports' };
/** Options whose value is `value[/mask]`, a missing mask meaning all ones. */
const MARK_OPTIONS: ReadonlySet<string> = new Set(MODULES.flatMap((m) => m.marks ?? []));
const RATE_UNITS: Readonly<Record<string, string>> = {
  s: 'sec',
  sec: 'sec',
  second: 'sec',
  m: 'min',
  min: 'min',
  minute: 'min',
  h: 'hour',
  hour: 'hour',
  d: 'day',
  day: 'day',
};

/** `module option` or `TARGET option` followed by the value each is left out with. */
const DEFAULTS: ReadonlySet<string> = new Set(MODULES.flatMap((m) => (m.defaults ?? []).map((d) => `${m.name} ${d}`)));

interface Group {
  /** `-m <module>`, `-j <target>`, `-g <chain>`, or `?` for words that belong to nothing we know. */
  readonly head: string;
  readonly name: string;
  readonly options: string[];
}

/** The canonical form of one rule's arguments (after `-A <chain>`), as a string to compare. */
export function canonicalRuleForm(args: readonly string[]): string {
  const header: string[] = [];
  const groups: Group[] = [];
  let protocol: string | undefined;
  let current: Group | undefined;
  let i = 0;
  while (i < args.length) {
    const negate = args[i] === '!';
    if (negate) i++;
    const word = args[i] ?? '';
    const not = negate ? '! ' : '';
    const short = HEADER_OPTIONS[word];
    if (short !== undefined) {
      const value = headerValue(short, args[i + 1] ?? '', negate);
      if (short === '-p' && !negate) protocol = value;
      if (value !== '') header.push(`${not}${short} ${value}`);
      current = undefined;
      i += 2;
    } else if (word === '-f' || word === '--fragment') {
      header.push(`${not}-f`);
      current = undefined;
      i += 1;
    } else if (word === '-m' || word === '--match') {
      current = { head: '-m', name: `${not}${args[i + 1] ?? ''}`, options: [] };
      groups.push(current);
      i += 2;
    } else if (word === '-j' || word === '--jump' || word === '-g' || word === '--goto') {
      const head = word === '-j' || word === '--jump' ? '-j' : '-g';
      current = { head, name: `${not}${args[i + 1] ?? ''}`, options: [] };
      groups.push(current);
      i += 2;
    } else if (word === '-c' && !negate) {
      i += 3;
    } else if (word.startsWith('--')) {
      // An option before any `-m`: it belongs to the module the protocol loads (`-p tcp --dport 80`).
      if (!current) groups.push((current = { head: '-m', name: protocol ?? '?', options: [] }));
      let end = i + 1;
      while (end < args.length && args[end] !== '!' && !args[end]!.startsWith('-')) end++;
      const option = optionText(current.name, `${not}${OPTION_ALIASES[word] ?? word}`, args.slice(i + 1, end));
      if (option !== undefined) current.options.push(option);
      i = end;
    } else {
      groups.push((current = { head: '?', name: `${not}${word}`, options: [] }));
      i += 1;
    }
  }
  return JSON.stringify([header.sort(), ordered(groups, protocol)]);
}

/** A header option's value in one spelling; '' for an option that matches every packet and is not negated. */
function headerValue(option: string, value: string, negated: boolean): string {
  const everything = (normal: string, matchesAll: boolean): string => (matchesAll && !negated ? '' : normal);
  if (option === '-p') {
    const name = value.toLowerCase();
    const known = PROTOCOL_NAMES[name] ?? name;
    return everything(known === '0' ? 'all' : known, known === 'all' || known === '0');
  }
  if (option === '-s' || option === '-d') {
    const address = value.toLowerCase();
    const full = address.includes('/') ? address : `${address}/${address.includes(':') ? 128 : 32}`;
    return everything(full, full === '0.0.0.0/0' || full === '::/0');
  }
  // `-i +`: any interface name (iptables-nft saves it away; the legacy listing shows it, legacy-listing.ts).
  return everything(value, value === '+');
}

/** One option with its values, normalised; undefined when it states the module's default. */
function optionText(module: string, option: string, values: readonly string[]): string | undefined {
  const name = option.startsWith('! ') ? option.slice(2) : option;
  let normal = values;
  if (values.length === 1) {
    const value = values[0]!;
    if (LIST_OPTIONS.has(name)) normal = [value.split(',').sort().join(',')];
    else if (MARK_OPTIONS.has(name)) normal = [markValue(value)];
    else if (name === '--limit') normal = [rateValue(value)];
  }
  const text = [option, ...normal].join(' ');
  return DEFAULTS.has(`${module} ${text}`) ? undefined : text;
}

function markValue(text: string): string {
  const m = /^(0x[0-9a-f]+|\d+)(?:\/(0x[0-9a-f]+|\d+))?$/i.exec(text);
  if (!m) return text;
  const hex = (n: string): string => `0x${(Number(n) >>> 0).toString(16)}`;
  return `${hex(m[1]!)}/${hex(m[2] ?? '0xffffffff')}`;
}

function rateValue(text: string): string {
  const m = /^(\d+)\/([a-z]+)$/.exec(text);
  const unit = m ? RATE_UNITS[m[2]!] : undefined;
  return m && unit ? `${m[1]}/${unit}` : text;
}

/**
 * Groups in canonical order: comments (they match every packet, so their place means nothing), then the
 * stateless matches sorted between the stateful ones that bound them, the target last. A protocol module
 * with no option left is the one `-p` loads anyway.
 */
function ordered(groups: readonly Group[], protocol: string | undefined): string[] {
  const comments: string[] = [];
  const out: string[] = [];
  let run: string[] = [];
  const flush = (): void => {
    out.push(...run.sort());
    run = [];
  };
  let target: string | undefined;
  for (const g of groups) {
    if (g.head === '-m' && g.name === protocol && g.options.length === 0) continue;
    const text = [g.head, g.name, ...[...g.options].sort()].join(' ');
    if (g.head === '-j' || g.head === '-g') target = text;
    else if (g.head === '-m' && g.name === 'comment') comments.push(text);
    else if (g.head === '-m' && STATELESS_MODULES.has(g.name)) run.push(text);
    else {
      flush();
      out.push(text);
    }
  }
  flush();
  if (target !== undefined) out.push(target);
  return [...comments.sort(), ...out];
}
