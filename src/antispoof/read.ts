// The programmed anti-spoofing table read back from `nft -j list table bridge netfence`: which port is
// bound to which addresses and what each drop rule counted, so `inspect` and `trace` speak about what
// the kernel holds rather than what the daemon meant to write. The JSON is read by render/nft-json.ts.

import { parseNftListing, type NftListedRule } from '../render/nft-json.js';
import type { AntiSpoofState, PortBinding } from './model.js';
import { portChain } from './render.js';

export interface ProgrammedAntiSpoof {
  readonly state: AntiSpoofState;
  /** Packets dropped per rule comment (`nf:spoof ipv4 vethX`, `nf:spoof unknown-port`). */
  readonly counters: ReadonlyMap<string, number>;
}

/** Undefined when the JSON holds no netfence bridge table. */
export function readProgrammedAntiSpoof(json: string, bridge: string): ProgrammedAntiSpoof | undefined {
  const listing = parseNftListing(json);
  const rules = listing.rules;
  if (!listing.chains.includes('prerouting')) return undefined;
  const counters = new Map<string, number>();
  for (const r of rules) if (r.comment !== undefined && r.counter?.packets !== undefined) counters.set(r.comment, r.counter.packets);
  const bindings: PortBinding[] = [];
  const otherPorts: string[] = [];
  for (const r of rules.filter((x) => x.chain === 'prerouting')) {
    const iif = r.matches.find((m) => m.meta === 'iifname');
    if (!iif) continue;
    if (r.verdict === 'accept') otherPorts.push(...iif.values);
    if (r.verdict !== 'jump') continue;
    const port = iif.values[0];
    if (port === undefined) continue;
    const mine = rules.filter((x: NftListedRule) => x.chain === portChain(port) && x.verdict === 'accept').flatMap((x) => x.matches);
    const sources = (protocol: string, field: string) =>
      mine.filter((m) => m.protocol === protocol && m.field === field).flatMap((m) => m.values);
    bindings.push({
      port,
      ipv4: sources('ip', 'saddr'),
      ipv6: sources('ip6', 'saddr').filter((a) => a !== '::' && !a.startsWith('fe80::')),
      source: 'programmed table',
    });
  }
  return { state: { bridge, bindings, unknownPorts: [], otherPorts, conflicts: [] }, counters };
}
