// What the compiled rules can tell apart about an address when it is the peer: which ipsets hold it (and
// for `hash:ip,port` sets, with which protocol and port). Every set of every compiled node is read once;
// set names are hashes of their content, so one name is one set cluster-wide. Membership is decided by the
// tracer's own `setMatches`, or for the plain `hash:ip` and `hash:ip,port` sets by an index of the same members.

import type { IpFamily } from '../model/index.js';
import { parseIp } from '../model/address.js';
import { setMatches, type IpSets } from '../trace/index.js';

export class AddressClasses {
  private readonly byIp = new Map<string, string[]>();
  private readonly nets: { name: string; set: Parameters<typeof setMatches>[0] }[] = [];
  private readonly seen = new Set<string>();
  private readonly memo = new Map<string, string>();

  constructor(private readonly family: IpFamily) {}

  /** Adds a node's sets (a set already read from another node is skipped). */
  add(ipsets: IpSets): void {
    for (const [name, set] of ipsets) {
      if (this.seen.has(name) || set.family !== this.family) continue;
      this.seen.add(name);
      if (set.type === 'hash:net') {
        this.nets.push({ name, set });
        continue;
      }
      for (const member of set.members) {
        const element = member.trim().split(/\s+/)[0] ?? '';
        const comma = element.lastIndexOf(',');
        const ipText = set.type === 'hash:ip,port' && comma >= 0 ? element.slice(0, comma) : element;
        const ip = parseIp(ipText);
        if (!ip) continue;
        const entry = set.type === 'hash:ip,port' ? `${name}@${element.slice(comma + 1)}` : name;
        const key = `${ip.value}`;
        const list = this.byIp.get(key);
        if (list) list.push(entry);
        else this.byIp.set(key, [entry]);
      }
    }
  }

  /** The sets holding `ip`, sorted: `nf4s:abc`, `nf4n:def@tcp:80`. Its class key is these joined by spaces. */
  classOf(ip: string): string {
    let known = this.memo.get(ip);
    if (known !== undefined) return known;
    const parsed = parseIp(ip);
    const entries = [...(parsed ? (this.byIp.get(`${parsed.value}`) ?? []) : [])];
    const probe = { src: ip, dst: ip, proto: 'tcp' as const, dport: 0, inIface: '', outIface: '', ctstate: 'NEW' as const };
    for (const { name, set } of this.nets) {
      const answer = setMatches(set, probe, 'src');
      if (answer.known && answer.member) entries.push(name);
    }
    known = [...new Set(entries)].sort().join(' ');
    this.memo.set(ip, known);
    return known;
  }

  /** Every CIDR the `hash:net` sets name (ipBlocks and their excepts, ClusterNetworkPolicy networks). */
  netCidrs(): string[] {
    return [...new Set(this.nets.flatMap(({ set }) => set.members.map((m) => m.trim().split(/\s+/)[0] ?? '')))].filter((c) => c !== '');
  }
}
