// A validating in-memory ipset (one network namespace), applying `ipset -exist restore` text the way
// ipset 7.x does: line by line and NOT transactional — lines before a failing one stay applied, as the
// real tool leaves them (src/dataplane/ipset.ts) — refusing what the real tool refuses: a create that
// clashes with an existing set of another type, a member of the wrong family or shape, a `/0` in a
// hash:net set, a swap of sets of different types, destroying a set a rule still uses, a `del` with member
// options ("Unknown argument: `nomatch'"), `nomatch` on a set type without it. Members are kept as
// `ipset save` prints them: host bits masked, a full-length prefix printed bare, IPv6 compressed, `nomatch`
// after the element; adding an element again with -exist replaces its options, as the kernel does. A set
// created with `timeout N` and `comment` (a learned set) takes `timeout T comment "…"` on its members and
// saves them so (the fake does not count timeouts down); one created without refuses them, as ipset does.

import ipaddr from 'ipaddr.js';
import type { IpFamily } from '../../src/model/index.js';
import { FakeRestoreError } from './fake-iptables.js';

interface FakeSet {
  readonly type: string;
  readonly family: IpFamily;
  readonly maxelem: number;
  /** `timeout N` on the create line (learned sets). */
  readonly timeout?: number;
  /** `comment` on the create line. */
  readonly comment?: true;
  /** By element (`10.0.0.5`), each as saved (`10.0.0.5 nomatch`). */
  members: Map<string, string>;
}

const TYPES = new Set(['hash:ip', 'hash:net', 'hash:ip,port']);
const PROTOCOLS = new Set(['tcp', 'udp', 'sctp']);

export class FakeIpset {
  private sets = new Map<string, FakeSet>();

  /** @param inUse names of sets that a rule refers to (either family): ipset will not destroy those. */
  constructor(private readonly inUse: () => ReadonlySet<string> = () => new Set()) {}

  familyOf(name: string): IpFamily | undefined {
    return this.sets.get(name)?.family;
  }

  names(): string[] {
    return [...this.sets.keys()];
  }

  /** `ipset save`: every set, its create line with the options the real tool prints, then members. */
  save(): string {
    const out: string[] = [];
    for (const [name, set] of this.sets) {
      out.push(
        `create ${name} ${set.type} family ${set.family === 4 ? 'inet' : 'inet6'} hashsize 1024 maxelem ${set.maxelem}${set.timeout !== undefined ? ` timeout ${set.timeout}` : ''}${set.comment ? ' comment' : ''} bucketsize 12 initval 0x00000000`,
      );
      for (const member of set.members.values()) out.push(`add ${name} ${member}`);
    }
    return out.length ? `${out.join('\n')}\n` : '';
  }

  /** `ipset -exist restore`. Throws FakeRestoreError naming the line, after applying the lines before it. */
  restore(text: string): void {
    text.split('\n').forEach((raw, i) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      this.command(line.match(/"[^"]*"|\S+/g) ?? [], i + 1);
    });
  }

  private command(words: readonly string[], lineNo: number): void {
    const [verb, name, ...rest] = words;
    const fail = (msg: string): never => {
      throw new FakeRestoreError(lineNo, msg);
    };
    if (name === undefined) fail('Syntax error: set name missing');
    const set = this.sets.get(name!);
    const need = (): FakeSet => set ?? fail('The set with the given name does not exist');
    switch (verb) {
      case 'create': {
        const wanted = parseCreate(rest, fail);
        if (
          set &&
          (set.type !== wanted.type ||
            set.family !== wanted.family ||
            set.maxelem !== wanted.maxelem ||
            set.timeout !== wanted.timeout ||
            set.comment !== wanted.comment)
        ) {
          fail('Set cannot be created: set with the same name already exists');
        }
        if (!set) this.sets.set(name!, { ...wanted, members: new Map() });
        return;
      }
      case 'add': {
        const s = need();
        const [element, ...options] = rest;
        const member = canonicalMember(s, element ?? '', fail);
        for (let k = 0; k < options.length; k++) {
          const option = options[k]!;
          if (option === 'timeout' || option === 'comment') {
            if (option === 'timeout' && s.timeout === undefined) fail('Kernel error received: set was created without timeout support');
            if (option === 'comment' && !s.comment) fail('Kernel error received: set was created without comment support');
            k++;
            continue;
          }
          if (option !== 'nomatch' || s.type !== 'hash:net') fail(`Unknown argument: \`${option}'`);
        }
        if (!s.members.has(member) && s.members.size >= s.maxelem) fail('Hash is full, cannot add more elements');
        s.members.set(member, [member, ...options].join(' '));
        return;
      }
      case 'del': {
        const s = need();
        const [element, ...options] = rest;
        if (options.length > 0) fail(`Unknown argument: \`${options[0]}'`);
        s.members.delete(canonicalMember(s, element ?? '', fail));
        return;
      }
      case 'flush':
        need().members = new Map();
        return;
      case 'destroy':
        need();
        if (this.inUse().has(name!)) fail('Set cannot be destroyed: it is in use by a kernel component');
        this.sets.delete(name!);
        return;
      case 'swap': {
        const a = need();
        const b = this.sets.get(rest[0] ?? '') ?? fail('The second set with the given name does not exist');
        if (a.type !== b.type || a.family !== b.family) fail('The sets cannot be swapped: their type does not match');
        this.sets.set(name!, b);
        this.sets.set(rest[0]!, a);
        return;
      }
      default:
        fail(`Syntax error: unknown command ${verb ?? ''}`);
    }
  }
}

function parseCreate(words: readonly string[], fail: (msg: string) => never): Omit<FakeSet, 'members'> {
  const [type, ...opts] = words;
  if (!type || !TYPES.has(type)) fail(`Syntax error: unsupported set type ${type ?? ''}`);
  const opt = (key: string): string | undefined => {
    const at = opts.indexOf(key);
    return at >= 0 ? opts[at + 1] : undefined;
  };
  const family = opt('family') ?? 'inet';
  if (family !== 'inet' && family !== 'inet6') fail(`Syntax error: unknown family ${family}`);
  const timeout = opt('timeout');
  return {
    type: type!,
    family: family === 'inet6' ? 6 : 4,
    maxelem: Number(opt('maxelem') ?? 65536),
    ...(timeout !== undefined ? { timeout: Number(timeout) } : {}),
    ...(opts.includes('comment') ? { comment: true as const } : {}),
  };
}

/** The member as `ipset save` prints it, or a failure naming what the real tool would. */
function canonicalMember(set: FakeSet, entry: string | undefined, fail: (msg: string) => never): string {
  if (set.type === 'hash:ip') return canonicalIp(set.family, entry ?? '', fail);
  if (set.type === 'hash:net') return canonicalNet(set.family, entry ?? '', fail);
  const comma = (entry ?? '').lastIndexOf(',');
  const [proto, port] = (entry ?? '').slice(comma + 1).split(':');
  if (comma < 0 || !proto || !PROTOCOLS.has(proto) || !/^\d+$/.test(port ?? '') || Number(port) > 65535)
    fail(`Syntax error: cannot parse ${entry}`);
  return `${canonicalIp(set.family, (entry ?? '').slice(0, comma), fail)},${proto}:${Number(port)}`;
}

function canonicalIp(family: IpFamily, text: string, fail: (msg: string) => never): string {
  if (!ipaddr.isValid(text)) fail(`Syntax error: cannot parse ${text}`);
  const addr = ipaddr.parse(text);
  if ((addr.kind() === 'ipv4' ? 4 : 6) !== family) fail(`Syntax error: cannot parse ${text}: resolving to IPv${family} address failed`);
  return addr.toString();
}

function canonicalNet(family: IpFamily, text: string, fail: (msg: string) => never): string {
  const [ip, len] = text.split('/');
  const full = family === 4 ? 32 : 128;
  const prefix = len === undefined ? full : Number(len);
  canonicalIp(family, ip ?? '', fail);
  if (!/^\d*$/.test(len ?? '') || prefix < 1 || prefix > full) fail('The value of the CIDR parameter of the IP address is invalid');
  const masked =
    family === 4 ? ipaddr.IPv4.networkAddressFromCIDR(`${ip}/${prefix}`) : ipaddr.IPv6.networkAddressFromCIDR(`${ip}/${prefix}`);
  return prefix === full ? masked.toString() : `${masked.toString()}/${prefix}`;
}
