// The outside world as the rules cut it: every CIDR the policies name (ipBlocks, their excepts, cluster
// policies' networks) and the whole address space, each minus the blocks inside it and minus the cluster's
// own addresses (pod CIDRs, node addresses). Each piece that is not empty gets one address to trace with.

import type { ClusterSnapshot, IpFamily } from '../model/index.js';
import { contains, familyBits, formatCidr, formatIp, parseCidrOrHost, type Cidr } from '../model/address.js';

export interface OutsideBlock {
  /** `0.0.0.0/0 except 10.0.0.0/8`. */
  readonly text: string;
  /** An address of the block that no smaller block and no cluster address holds. */
  readonly ip: string;
}

const endOf = (c: Cidr): bigint => c.base + (1n << BigInt(familyBits(c.family) - c.prefix)) - 1n;

export function outsideBlocks(snapshot: ClusterSnapshot, family: IpFamily, named: readonly string[]): OutsideBlock[] {
  const parse = (texts: readonly string[]): Cidr[] => texts.flatMap((t) => parseCidrOrHost(t) ?? []).filter((c) => c.family === family);
  const root: Cidr = { family, base: 0n, prefix: 0 };
  const blocks = dedupe([root, ...parse(named)]);
  const nodes = parse(snapshot.nodes.flatMap((n) => [...n.podCidrs, ...n.addresses]));
  // A pod address inside a node's pod CIDR cuts nothing that CIDR does not already cut: left out, so each
  // block below is held against the nodes and the few pods outside their CIDRs, not against every pod.
  const inNodes = holder(nodes);
  const cluster = [...nodes, ...parse(snapshot.pods.flatMap((p) => p.ips)).filter((ip) => !inNodes(ip))];
  const out: OutsideBlock[] = [];
  for (const c of blocks) {
    if (cluster.some((x) => contains(x, c))) continue;
    const inner = blocks.filter((x) => x !== c && contains(c, x));
    const holes = [...inner, ...cluster.filter((x) => contains(c, x))].sort((a, b) =>
      a.base < b.base ? -1 : a.base > b.base ? 1 : a.prefix - b.prefix,
    );
    const ip = firstFree(c, holes);
    if (ip === undefined) continue;
    const maximal = inner.filter((x) => !inner.some((y) => y !== x && contains(y, x)));
    out.push({ text: blockText(formatCidr(c), maximal.map(formatCidr)), ip: formatIp(family, ip) });
  }
  return out;
}

/** An outside block's text: `0.0.0.0/0 except 10.0.0.0/8, 172.16.0.0/12`, or the CIDR alone when nothing is cut out. */
export const blockText = (base: string, except: readonly string[]): string =>
  except.length > 0 ? `${base} except ${except.join(', ')}` : base;

/** blockText taken apart again (the live overlay and the domain-name stand-ins read the blocks back). */
export function blockParts(text: string): { readonly base: string; readonly except: readonly string[] } {
  const [base, except] = text.split(' except ');
  return { base: base!, except: except === undefined ? [] : except.split(', ') };
}

/** Whether some CIDR of `list` holds a CIDR: one lookup per prefix length `list` has. */
function holder(list: readonly Cidr[]): (c: Cidr) => boolean {
  const byPrefix = new Map<number, Set<bigint>>();
  for (const x of list) byPrefix.set(x.prefix, (byPrefix.get(x.prefix) ?? new Set()).add(x.base));
  return (c) => {
    const bits = BigInt(familyBits(c.family));
    for (const [prefix, bases] of byPrefix) {
      const host = bits - BigInt(prefix);
      if (prefix <= c.prefix && bases.has((c.base >> host) << host)) return true;
    }
    return false;
  };
}

/** The first address of `c` in none of `holes` (sorted by base), skipping the network address of a wide block. */
function firstFree(c: Cidr, holes: readonly Cidr[]): bigint | undefined {
  let at = c.prefix <= familyBits(c.family) - 2 ? c.base + 1n : c.base;
  const end = endOf(c);
  for (const h of holes) {
    if (at > end) return undefined;
    if (at >= h.base && at <= endOf(h)) at = endOf(h) + 1n;
  }
  return at <= end ? at : undefined;
}

function dedupe(cidrs: readonly Cidr[]): Cidr[] {
  const seen = new Set<string>();
  return cidrs.filter((c) => {
    const k = `${c.base}/${c.prefix}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
