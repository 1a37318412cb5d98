// The one cache of rendered policy chains (NetworkPolicy and ClusterNetworkPolicy alike): per source object,
// by identity, then by the rest of what the chain was rendered from. A renderer returns its chain with the
// sets it names (ipsets.ts RenderedChain), so a cached result is reused by registering those sets again:
// nothing about the renderer's calls has to be recorded and replayed.

import type { ClusterNetworkPolicy, IpFamily, NetworkPolicy, Pod } from '../model/index.js';
import type { RenderedChain } from './ipsets.js';
import type { Direction } from './policy-chains.js';

/**
 * Direction, family, and a flag the renderer takes: a NetworkPolicy's validity, a CNP chain's verdict-only copy;
 * last, the subject pods of a CNP whose `domainNames` rules match per pod (the same array while they are the
 * same), else null.
 */
type ChainKey = readonly [Direction, IpFamily, boolean, readonly Pod[] | null];

export class ChainCache {
  // Per object its entries in eight slots (direction × family × flag): asked for once per policy and
  // direction on every compile, a compiler asked for each node in turn asks some 100,000 times.
  private readonly byObject = new WeakMap<NetworkPolicy | ClusterNetworkPolicy, (Entry | undefined)[]>();

  get(object: NetworkPolicy | ClusterNetworkPolicy, key: ChainKey, render: () => RenderedChain): RenderedChain {
    const [direction, family, flag, subjects] = key;
    let perObject = this.byObject.get(object);
    if (!perObject) this.byObject.set(object, (perObject = []));
    const slot = (direction === 'ingress' ? 0 : 4) + (family === 6 ? 2 : 0) + (flag ? 1 : 0);
    const found = perObject[slot];
    // Only the latest subjects are kept: a long-lived CNP's pods come and go, its old chains must not pile up.
    if (found && found.subjects === subjects) return found.rendered;
    const rendered = render();
    perObject[slot] = { subjects, rendered };
    return rendered;
  }
}

interface Entry {
  readonly subjects: readonly Pod[] | null;
  readonly rendered: RenderedChain;
}
