// Who may hold a connection to the metrics port. A total cap alone let one client take every slot: 80 slow
// half-sent requests from one pod failed 25 of 25 kubelet probes, and the kubelet restarted the daemon in a
// loop. Each peer outside the reserved ones (the node's loopback, where the kubelet probes from; see
// deploy/daemonset.yaml) now gets a share, and all of them together leave room for the reserved ones.

import type { ConnectionRefusal } from './metrics-hostile.js';

export interface AdmissionLimits {
  /** Connections at once, reserved peers included. */
  readonly maxConnections: number;
  /** Connections at once from one address outside the reserved ones. */
  readonly maxPerPeer: number;
  /** Slots only reserved peers may take: others together hold at most maxConnections − this. */
  readonly reservedForLoopback: number;
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped form: the node itself (the kubelet's probes). */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return v4.startsWith('127.') || address === '::1';
}

export class ConnectionAdmission {
  private readonly perPeer = new Map<string, number>();
  private total = 0;
  private others = 0;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly isReserved: (address: string) => boolean = isLoopback,
  ) {}

  /** Takes a slot for the peer, or says why not. Every admitted connection must be released once. */
  admit(address: string): ConnectionRefusal | undefined {
    if (this.total >= this.limits.maxConnections) return 'total';
    const reserved = this.isReserved(address);
    if (!reserved) {
      if ((this.perPeer.get(address) ?? 0) >= this.limits.maxPerPeer) return 'per-peer';
      if (this.others >= this.limits.maxConnections - this.limits.reservedForLoopback) return 'total';
      this.others++;
    }
    this.perPeer.set(address, (this.perPeer.get(address) ?? 0) + 1);
    this.total++;
    return undefined;
  }

  release(address: string): void {
    const n = (this.perPeer.get(address) ?? 0) - 1;
    if (n > 0) this.perPeer.set(address, n);
    else this.perPeer.delete(address);
    this.total--;
    if (!this.isReserved(address)) this.others--;
  }
}
