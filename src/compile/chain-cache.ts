// The one cache of rendered policy chains (NetworkPolicy and ClusterNetworkPolicy alike): per source object,
// by identity, then by the rest of what the chain was rendered from. A renderer returns its chain with the
// sets it names (ipsets.ts RenderedChain), so a cached result is reused by registering those sets again:
// nothing about the renderer's calls has to be recorded and replayed.

import type { ClusterNetworkPolicy, IpFamily, NetworkPolicy, Pod } from '../model/index.js';
import type { RenderedChain } from './ipsets.js';
import { TupleMap } from './memo.js';
import type { Direction } from './policy-chains.js';

/**
 * Direction, family, and a flag the renderer takes: a NetworkPolicy's validity, a CNP chain's verdict-only copy;
 * last, the subject pods of a CNP whose `domainNames` rules match per pod (the same array while they are the same).
 */
type ChainKey = readonly [Direction, IpFamily, boolean, readonly Pod[] | null];

export class ChainCache {
  private readonly byObject = new WeakMap<NetworkPolicy | ClusterNetworkPolicy, TupleMap<ChainKey, RenderedChain>>();

  get(object: NetworkPolicy | ClusterNetworkPolicy, key: ChainKey, render: () => RenderedChain): RenderedChain {
    let perObject = this.byObject.get(object);
    if (!perObject) this.byObject.set(object, (perObject = new TupleMap()));
    let found = perObject.get(key);
    if (!found) perObject.set(key, (found = render()));
    return found;
  }
}
