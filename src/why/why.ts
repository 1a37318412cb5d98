// `why`: one answer for a connection across the cluster. Places both ends, picks the packet's IP family,
// walks the packet through every node that judges it (each compiled once) and words the answer.

import type { ClusterSnapshot, IpFamily, L4Protocol, NodeSettings } from '../model/index.js';
import { answerOf, type Answer } from './answer.js';
import { EndpointError, familiesOf, locate } from './endpoints.js';
import { walkConnection, type CompiledRules } from './walk.js';

export interface WhyQuery {
  /** `ns/pod` or an IP address. */
  readonly src: string;
  readonly dst: string;
  readonly proto: L4Protocol;
  readonly port: number;
  /** Default: the addresses' family; two pods: the family both have, IPv4 when they share both. */
  readonly family?: IpFamily;
}

/** `compiled`: pass one cache to every question about the same snapshot and settings to compile each node once. */
export function whyConnection(
  snapshot: ClusterSnapshot,
  settingsFor: (node: string) => NodeSettings,
  q: WhyQuery,
  compiled?: CompiledRules,
): Answer {
  const family = familyOf(snapshot, q);
  const src = locate(q.src, snapshot, family);
  const dst = locate(q.dst, snapshot, family);
  if (src.kind !== 'pod' && dst.kind !== 'pod' && dst.kind !== 'unknown-pod')
    throw new EndpointError(`neither ${q.src} nor ${q.dst} is a pod: netfence judges only connections of pods`);
  const connection = { src, dst, family, proto: q.proto, port: q.port };
  return answerOf(snapshot, connection, walkConnection(snapshot, settingsFor, connection, compiled));
}

function familyOf(snapshot: ClusterSnapshot, q: WhyQuery): IpFamily {
  const [a, b] = [familiesOf(q.src, snapshot), familiesOf(q.dst, snapshot)];
  const both = a.filter((f) => b.includes(f));
  if (q.family !== undefined) {
    if (!both.includes(q.family))
      throw new EndpointError(`IPv${q.family}: ${q.src} and ${q.dst} do not both have IPv${q.family} addresses`);
    return q.family;
  }
  // A pod not found has no families: let locate() name it.
  if (a.length === 0 || b.length === 0) return a[0] ?? b[0] ?? 4;
  if (both.length === 0)
    throw new EndpointError(`${q.src} (IPv${a.join('/')}) and ${q.dst} (IPv${b.join('/')}) have no IP family in common`);
  return both[0]!;
}
