// Deterministic, length-limited names for everything we create (kube-proxy's "KUBE-SVC-" + hash[:16]).

import {
  CHAIN_KIND_TAG,
  chainName,
  FIXED_CHAIN,
  ipSetName,
  taggedChainName,
  type ChainName,
  type ChainTag,
  type IpFamily,
  type IpSetName,
  sha256Binary,
} from '../model/index.js';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Lower-case base32 of SHA-256: safe in chain and set names, case-insensitive friendly. */
export function hash32(text: string, length: number): string {
  const digest = sha256Binary(text);
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < digest.length; i++) {
    buffer = (buffer << 8) | digest.charCodeAt(i);
    bits += 8;
    while (bits >= 5 && out.length < length) {
      out += BASE32[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
    if (out.length >= length) break;
  }
  return out;
}

export interface ChainNames {
  readonly forward: ChainName;
  readonly fromDispatch: ChainName;
  readonly toDispatch: ChainName;
  readonly fromDispatchChild: (key: string) => ChainName;
  readonly toDispatchChild: (key: string) => ChainName;
  /** Egress of a local pod ("from workload"). */
  fromWorkload(podKey: string): ChainName;
  /** Ingress of a local pod ("to workload"). */
  toWorkload(podKey: string): ChainName;
  /** INPUT side (ClusterNetworkPolicy egress to this node's own addresses). */
  readonly input: ChainName;
  /** OUTPUT side: DNS answers of node-local resolvers to pods with `domainNames` egress. */
  readonly output: ChainName;
  readonly hostDispatch: ChainName;
  /** The target of local pods with no CNP egress tier in the host dispatch: returns at once. */
  readonly hostPass: ChainName;
  readonly hostDispatchChild: (key: string) => ChainName;
  /** A local pod's traffic to this node ("from workload to host"). */
  toHost(podKey: string): ChainName;
  policyIngress(policyKey: string): ChainName;
  policyEgress(policyKey: string): ChainName;
}

/** One ChainNames per prefix: a pure function of it, and a map makes a RenderMemory per node it compiles. */
const namesByPrefix = new Map<string, ChainNames>();

export function chainNames(prefix: string): ChainNames {
  let names = namesByPrefix.get(prefix);
  if (!names) namesByPrefix.set(prefix, (names = makeChainNames(prefix)));
  return names;
}

function makeChainNames(prefix: string): ChainNames {
  // Names are asked for on every compile; hashing each key once is enough. One memo per kind of name,
  // settled here: a name asked for is one map lookup.
  const hashed = (kind: ChainTag, len = 16): ((key: string) => ChainName) => {
    const memo = new Map<string, ChainName>();
    return (key) => {
      let name = memo.get(key);
      if (name === undefined) {
        if (memo.size > 200_000) memo.clear();
        memo.set(key, (name = chainName(taggedChainName(prefix, kind, hash32(`${kind}|${key}`, len)))));
      }
      return name;
    };
  };
  return {
    forward: chainName(`${prefix}${FIXED_CHAIN.forward}`),
    fromDispatch: chainName(`${prefix}${FIXED_CHAIN.fromDispatch}`),
    toDispatch: chainName(`${prefix}${FIXED_CHAIN.toDispatch}`),
    input: chainName(`${prefix}${FIXED_CHAIN.input}`),
    output: chainName(`${prefix}${FIXED_CHAIN.output}`),
    hostDispatch: chainName(`${prefix}${FIXED_CHAIN.hostDispatch}`),
    hostPass: chainName(`${prefix}${FIXED_CHAIN.hostPass}`),
    hostDispatchChild: hashed(CHAIN_KIND_TAG.hostDispatchChild, 12),
    toHost: hashed(CHAIN_KIND_TAG.toHost),
    fromDispatchChild: hashed(CHAIN_KIND_TAG.fromDispatchChild, 12),
    toDispatchChild: hashed(CHAIN_KIND_TAG.toDispatchChild, 12),
    fromWorkload: hashed(CHAIN_KIND_TAG.fromWorkload),
    toWorkload: hashed(CHAIN_KIND_TAG.toWorkload),
    policyIngress: hashed(CHAIN_KIND_TAG.policyIngress),
    policyEgress: hashed(CHAIN_KIND_TAG.policyEgress),
  };
}

/**
 * Set kinds: `s` selector (pod IPs), `n` named port (IP,proto:port), `b` ipBlock (CIDRs), `x` ipBlock excepts
 * (CIDRs), `d` addresses one pod learned from DNS for one `domainNames` rule, `q` the pods whose DNS is watched.
 */
export type SetKind = 's' | 'n' | 'b' | 'x' | 'd' | 'q';

const setNames = new Map<string, IpSetName>();
export function ipSetNameFor(prefix: string, family: IpFamily, kind: SetKind, canonicalKey: string): IpSetName {
  const head = `${prefix}${family}${kind}:`;
  const id = `${head}|${canonicalKey}`;
  let name = setNames.get(id);
  if (name === undefined) {
    if (setNames.size > 200_000) setNames.clear();
    setNames.set(id, (name = ipSetName(head + hash32(`${family}${kind}|${canonicalKey}`, Math.min(20, 31 - head.length)))));
  }
  return name;
}
