// What the compiled rules can tell apart about an address: which ipsets hold it (and for `hash:ip,port` sets,
// with which protocol and port). A set's name is the hash of what it stands for (a selector, an ipBlock, a
// policy's named port), so one name means one thing cluster-wide; its members may differ by node (a
// named-port set holds the node's own targets), so each name's members are the union over the nodes.
// Membership is decided by the tracer's own `setMatches` for `hash:net` sets, by an index of the members for
// the plain `hash:ip` and `hash:ip,port` sets.

import type { IpFamily } from '../model/index.js';
import { familyBits, parseCidrOrHost, parseIp, type ParsedIp } from '../model/address.js';
import { setMatches, type IpSets } from '../trace/index.js';

type SavedIpSet = IpSets extends ReadonlyMap<string, infer S> ? S : never;

/**
 * A `hash:ip` or `hash:ip,port` set's members as (address value, entry) pairs, `keys[i]` with `entries[i]`, read
 * once per set object: the two clusters of a diff hand over the same object for a set that did not change. Two
 * lists, not a pair per member: a map reads every member of every set, and the one-shot commands run
 * unoptimised (cli/main.ts), where taking a pair apart costs more than the rest of the loop.
 */
interface SetEntries {
  readonly name: string;
  readonly keys: readonly string[];
  readonly entries: readonly string[];
}
const entriesBySet = new WeakMap<SavedIpSet, SetEntries>();
function entriesOf(name: string, set: SavedIpSet): SetEntries {
  const known = entriesBySet.get(set);
  if (known?.name === name) return known;
  const keys: string[] = [];
  const entries: string[] = [];
  const members = set.members;
  for (let i = 0; i < members.length; i++) {
    const text = members[i]!.trim();
    const space = text.search(/\s/);
    const element = space < 0 ? text : text.slice(0, space);
    const comma = element.lastIndexOf(',');
    const ipText = set.type === 'hash:ip,port' && comma >= 0 ? element.slice(0, comma) : element;
    const ip = parseIp(ipText);
    if (!ip) continue;
    keys.push(`${ip.value}`);
    entries.push(set.type === 'hash:ip,port' ? `${name}@${element.slice(comma + 1)}` : name);
  }
  const read = { name, keys, entries };
  entriesBySet.set(set, read);
  return read;
}

export class AddressClasses {
  private readonly byIp = new Map<string, string[]>();
  private readonly nets: { name: string; set: Parameters<typeof setMatches>[0] }[] = [];
  private readonly seen = new Set<string>();
  /** The set objects read, by name (a named-port set has one per node). */
  private readonly objects = new Map<string, SavedIpSet[]>();
  private readonly memo = new Map<string, string>();
  /** Each class's text, the first string made of it (classOf). */
  private readonly texts = new Map<string, string>();
  /** The `hash:net` sets holding an address, by the address's first `netBits` bits (netsOf). */
  private readonly netMemo = new Map<bigint, string[]>();
  private netBits: number | undefined;

  constructor(private readonly family: IpFamily) {}

  /** Adds a node's sets (members of a set another node has too are added to its). */
  add(ipsets: IpSets): void {
    // forEach and indexed loops: some 12,000 sets a cluster, read unoptimized (cli/main.ts), where `for…of`
    // and `[key, entry]` each make an iterator.
    ipsets.forEach((set, name) => {
      if (set.family !== this.family) return;
      // A selector's or an ipBlock's set is the same on every node (its members are what the cluster and the
      // policy say): read once. A named-port set holds the node's own targets: read on every node.
      if (set.type !== 'hash:ip,port' && this.seen.has(name)) return;
      this.seen.add(name);
      const read = this.objects.get(name);
      if (read) read.push(set);
      else this.objects.set(name, [set]);
      if (set.type === 'hash:net') {
        this.nets.push({ name, set });
        this.netMemo.clear();
        this.netBits = undefined;
        return;
      }
      const { keys, entries } = entriesOf(name, set);
      for (let i = 0; i < keys.length; i++) {
        const list = this.byIp.get(keys[i]!);
        if (list) list.push(entries[i]!);
        else this.byIp.set(keys[i]!, [entries[i]!]);
      }
    });
  }

  /**
   * Keeps what `other` (the other cluster of a diff, all its sets added) worked out for every address no set
   * that differs between the two holds: such an address is in the same sets on both sides. When a `hash:net`
   * set differs, any address may be in it: nothing is kept.
   */
  inherit(other: AddressClasses): void {
    if (other.family !== this.family || other.nets.length !== this.nets.length) return;
    if (this.nets.some((n, i) => n.name !== other.nets[i]!.name || n.set !== other.nets[i]!.set)) return;
    const touched = new Set<string>();
    for (const name of new Set([...this.objects.keys(), ...other.objects.keys()])) {
      const mine = this.objects.get(name) ?? [];
      const theirs = other.objects.get(name) ?? [];
      if (mine.length === theirs.length && mine.every((set) => theirs.includes(set))) continue;
      for (const set of [...mine, ...theirs]) for (const key of entriesOf(name, set).keys) touched.add(key);
    }
    other.memo.forEach((known, ip) => {
      const parsed = parseIp(ip);
      if (parsed?.family !== this.family || touched.has(`${parsed.value}`)) return;
      this.memo.set(ip, known);
      if (!this.texts.has(known)) this.texts.set(known, known);
    });
    this.netBits = other.netBits;
    for (const [block, names] of other.netMemo) this.netMemo.set(block, names);
  }

  /** The sets holding `ip`, sorted: `nf4s:abc`, `nf4n:def@tcp:80`. Its class key is these joined by spaces. */
  classOf(ip: string): string {
    let known = this.memo.get(ip);
    if (known !== undefined) return known;
    const parsed = parseIp(ip);
    const held = parsed ? this.byIp.get(`${parsed.value}`) : undefined;
    const nets = this.netsOf(ip, parsed);
    // Sorted, each entry once (a named-port set's entry comes from every node whose set holds the address).
    const entries = held ? held.concat(nets) : nets.slice();
    entries.sort();
    const once: string[] = [];
    for (let i = 0; i < entries.length; i++) if (i === 0 || entries[i] !== entries[i - 1]) once.push(entries[i]!);
    // One string per class, shared by its addresses: the map compares and looks classes up pod by pod, and a
    // class is every set holding the address (often a long text), so equal ones are best the same string.
    const text = once.join(' ');
    known = this.texts.get(text);
    if (known === undefined) this.texts.set(text, (known = text));
    this.memo.set(ip, known);
    return known;
  }

  /**
   * The `hash:net` sets holding `ip`. Two addresses alike in the first bits of the longest prefix any of
   * those sets names are in the same entries of every one of them, so in the same sets: asked once per such
   * block (pods of one node's /24 share a handful), not once per address.
   */
  private netsOf(ip: string, parsed: ParsedIp | undefined): string[] {
    if (this.nets.length === 0) return [];
    this.netBits ??= Math.max(
      0,
      ...this.nets.flatMap(({ set }) =>
        set.members.map((m) => parseCidrOrHost(m.trim().split(/\s+/)[0] ?? '')?.prefix ?? familyBits(this.family)),
      ),
    );
    const block = parsed?.family === this.family ? parsed.value >> BigInt(familyBits(this.family) - this.netBits) : undefined;
    const known = block !== undefined ? this.netMemo.get(block) : undefined;
    if (known) return known;
    const probe = { src: ip, dst: ip, proto: 'tcp' as const, dport: 0, inIface: '', outIface: '', ctstate: 'NEW' as const };
    const names: string[] = [];
    for (const { name, set } of this.nets) {
      const answer = setMatches(set, probe, 'src');
      if (answer.known && answer.member) names.push(name);
    }
    if (block !== undefined) this.netMemo.set(block, names);
    return names;
  }

  /** Every CIDR the `hash:net` sets name (ipBlocks and their excepts, ClusterNetworkPolicy networks). */
  netCidrs(): string[] {
    return [...new Set(this.nets.flatMap(({ set }) => set.members.map((m) => m.trim().split(/\s+/)[0] ?? '')))].filter((c) => c !== '');
  }
}
