// Strict mode's decision, pure: given the conntrack entries of one family and the ruleset just
// programmed, which flows must carry the revoke bit and which must lose it.
//
// A flow is judged as its first packet would be judged now: from the initiator (the original tuple's
// source) to the post-DNAT destination (the reply tuple's source), on the destination port the pod
// really serves (the reply tuple's source port). That is what netfence's FORWARD chain sees, since
// kube-proxy's DNAT happens in PREROUTING. A flow the rules refuse gets the bit, in whichever state it
// is; a flow carrying the bit that the rules now allow loses it (a later allow must undo a revoke).

import type { CtEntry, MarkUpdate } from '../dataplane/ctnetlink.js';
import type { L4Protocol } from '../model/index.js';
import { isLocal, packetFor, type NodeLayout, type Packet } from '../trace/packet.js';

const PROTOCOLS: ReadonlyMap<number, L4Protocol> = new Map([
  [6, 'tcp'],
  [17, 'udp'],
  [132, 'sctp'],
]);

/** The first packet of the entry's flow as nf-FORWARD sees it, or why it is not ours to judge. */
export function flowPacket(
  entry: CtEntry,
  layout: NodeLayout,
  local: (ip: string) => boolean = (ip) => isLocal(ip, layout),
): Packet | { readonly skip: 'protocol' | 'not-local' } {
  const proto = PROTOCOLS.get(entry.orig.proto);
  // Policies name TCP, UDP and SCTP ports only; ICMP and the rest are never denied by a port rule, and
  // a pod-level deny of ICMP would need the same judgement on a tuple without ports (not done).
  if (!proto || entry.reply.sport === undefined) return { skip: 'protocol' };
  const src = entry.orig.src;
  const dst = entry.reply.src;
  if (!local(src) && !local(dst)) return { skip: 'not-local' };
  return packetFor(
    { src, dst, proto, dport: entry.reply.sport, ...(entry.orig.sport !== undefined ? { sport: entry.orig.sport } : {}) },
    layout,
  );
}

export interface RevokePlan {
  /** Set the bit: the rules refuse these flows and they do not carry it yet. */
  readonly revoke: readonly CtEntry[];
  /** Clear the bit: these carry it but the rules allow them (again), or they are no longer ours to judge. */
  readonly restore: readonly CtEntry[];
  /** Entries walked through the rules (after de-duplication by packet), and entries looked at in all. */
  readonly judged: number;
  readonly seen: number;
}

/**
 * `refuses(packet)` answers whether the current rules drop the packet (the tracer over rulesetOfDesired
 * in production, anything in tests). Answers are cached per (src, dst, proto, dport): a busy table
 * holds many flows of one service, and policy never looks at the source port.
 */
export function planRevocations(
  entries: readonly CtEntry[],
  layout: NodeLayout,
  bit: number,
  refuses: (packet: Packet) => boolean,
): RevokePlan {
  // Verdicts by (src, dst, proto, dport); undefined: not ours to judge. Addresses repeat across a busy
  // table, so locality is worked out once per address too.
  const cache = new Map<string, boolean | undefined>();
  const locality = new Map<string, boolean>();
  const local = (ip: string): boolean => {
    let answer = locality.get(ip);
    if (answer === undefined) locality.set(ip, (answer = isLocal(ip, layout)));
    return answer;
  };
  const revoke: CtEntry[] = [];
  const restore: CtEntry[] = [];
  for (const entry of entries) {
    const carries = (entry.mark & bit) !== 0;
    const key = `${entry.orig.src} ${entry.reply.src} ${entry.orig.proto} ${entry.reply.sport}`;
    let refused = cache.get(key);
    if (!cache.has(key)) {
      const packet = flowPacket(entry, layout, local);
      refused = 'skip' in packet ? undefined : refuses(packet);
      cache.set(key, refused);
    }
    if (refused === undefined) {
      if (carries) restore.push(entry);
      continue;
    }
    if (refused && !carries) revoke.push(entry);
    if (!refused && carries) restore.push(entry);
  }
  return { revoke, restore, judged: [...cache.values()].filter((v) => v !== undefined).length, seen: entries.length };
}

/** The netlink updates that carry out a plan: set the bit on `revoke`, clear it on `restore`. */
export function markUpdates(plan: RevokePlan, bit: number): MarkUpdate[] {
  const update = (e: CtEntry, value: number): MarkUpdate => ({ family: e.family, orig: e.orig, zone: e.zone, value, mask: bit });
  return [...plan.revoke.map((e) => update(e, bit)), ...plan.restore.map((e) => update(e, 0))];
}
