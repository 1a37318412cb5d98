// Where each end of a connection lives in the cluster: a pod (and the node it runs on), a node's own
// address, or an address outside the cluster. Pods and nodes come from the snapshot; a bare address is a
// pod's when a pod owns it, a node's when a Node lists it, a node's pod CIDR says whose node it is in.

import { podKey, type ClusterSnapshot, type IpFamily, type Pod } from '../model/index.js';
import { inAnyCidr, parseIp } from '../model/address.js';
import { countsAsPeer } from '../compile/pod-peers.js';

export type Endpoint =
  | { readonly kind: 'pod'; readonly ip: string; readonly pod: string; readonly node: string }
  /** An address of a node's pod CIDR that no pod owns: judged (fail-closed) by that node. */
  | { readonly kind: 'unknown-pod'; readonly ip: string; readonly node: string }
  | { readonly kind: 'node'; readonly ip: string; readonly node: string }
  | { readonly kind: 'external'; readonly ip: string };

/** A reference the cluster cannot answer for (no such pod, a pod without an address of the family…). */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
}

const NAME_REF = /^[^/\s]+\/[^/\s]+$/;

/** A snapshot's pods by `ns/name`, and the pods that count by address; the first in the list, as a search in order finds. */
interface PodIndex {
  readonly byKey: ReadonlyMap<string, Pod>;
  readonly byAddress: ReadonlyMap<string, Pod>;
}

/**
 * Built once per pods list (a snapshot is never changed in place): `netfence map` asks `why` of 2,000 of its
 * connections, and a search of 10,000 pods for each end of each took seconds.
 */
const indexes = new WeakMap<readonly Pod[], PodIndex>();

const addressKey = (family: IpFamily, value: bigint): string => `${family}:${value}`;

function indexOf(pods: readonly Pod[]): PodIndex {
  let index = indexes.get(pods);
  if (index) return index;
  const byKey = new Map<string, Pod>();
  const byAddress = new Map<string, Pod>();
  for (const p of pods) {
    const key = podKey(p);
    if (!byKey.has(key)) byKey.set(key, p);
    // Running pods with addresses: the ones policies count (a completed or host-network pod is nobody's peer).
    if (!countsAsPeer(p)) continue;
    for (const ip of p.ips) {
      const addr = parseIp(ip);
      const at = addr && addressKey(addr.family, addr.value);
      if (at !== undefined && !byAddress.has(at)) byAddress.set(at, p);
    }
  }
  index = { byKey, byAddress };
  indexes.set(pods, index);
  return index;
}

/** The pod named `ns/name` (the first of that name). */
export const podNamed = (snapshot: ClusterSnapshot, ref: string): Pod | undefined => indexOf(snapshot.pods).byKey.get(ref);

/** `ns/pod` or an IP address of `family`, placed in the cluster. */
export function locate(ref: string, snapshot: ClusterSnapshot, family: IpFamily): Endpoint {
  const literal = parseIp(ref);
  if (literal) {
    if (literal.family !== family) throw new EndpointError(`${ref} is an IPv${literal.family} address, and this packet is IPv${family}`);
    return locateAddress(ref, snapshot);
  }
  if (!NAME_REF.test(ref)) throw new EndpointError(`"${ref}" is neither an IP address nor namespace/pod`);
  const pod = podNamed(snapshot, ref);
  if (!pod) throw new EndpointError(`pod ${ref} is not in the cluster`);
  if (!countsAsPeer(pod))
    throw new EndpointError(`pod ${ref} ${pod.hostNetwork ? 'uses the host network' : 'has no address or is not running'}`);
  const ip = pod.ips.find((i) => parseIp(i)?.family === family);
  if (ip === undefined) throw new EndpointError(`pod ${ref} has no IPv${family} address (it has ${pod.ips.join(', ')})`);
  return { kind: 'pod', ip, pod: ref, node: pod.nodeName };
}

function locateAddress(ip: string, snapshot: ClusterSnapshot): Endpoint {
  const addr = parseIp(ip)!;
  const same = (other: string) => {
    const o = parseIp(other);
    return o !== undefined && o.family === addr.family && o.value === addr.value;
  };
  const pod = indexOf(snapshot.pods).byAddress.get(addressKey(addr.family, addr.value));
  if (pod) return { kind: 'pod', ip, pod: podKey(pod), node: pod.nodeName };
  const node = snapshot.nodes.find((n) => n.addresses.some(same));
  if (node) return { kind: 'node', ip, node: node.name };
  const owner = snapshot.nodes.find((n) => inAnyCidr(addr, n.podCidrs));
  if (owner) return { kind: 'unknown-pod', ip, node: owner.name };
  return { kind: 'external', ip };
}

/** The IP families a reference can be traced in: an address's own, a pod's addresses' families. */
export function familiesOf(ref: string, snapshot: ClusterSnapshot): readonly IpFamily[] {
  const literal = parseIp(ref);
  if (literal) return [literal.family];
  const pod = podNamed(snapshot, ref);
  const families = new Set((pod?.ips ?? []).flatMap((i) => parseIp(i)?.family ?? []));
  return ([4, 6] as const).filter((f) => families.has(f));
}
