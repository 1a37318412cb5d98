// How set member changes reach the kernel: over ipset netlink (no process per change) or through `ipset
// restore` (disabled, or the kernel refused netlink: the fallback, logged once when it happens).

import { Counter, Gauge, type Registry } from 'prom-client';

export type IpsetWriterMode = 'netlink' | 'restore';

export interface IpsetWriterMetrics {
  /** The path member changes take now; `restore` after a fallback or when configured off. */
  setIpsetWriter(mode: IpsetWriterMode): void;
  /** One ipset step written over netlink (the per-change path, with no process). */
  countIpsetNetlinkWrite(): void;
}

export function createIpsetWriterMetrics(registers: Registry[]): IpsetWriterMetrics {
  const writer = new Gauge({
    name: 'netfence_ipset_writer',
    help: 'How set member changes are written: 1 for the mode in use. netlink: the ipset netlink protocol, no process; restore: one ipset restore per change (configured off, or the kernel refused netlink: the reason is logged once).',
    labelNames: ['mode'] as const,
    registers,
  });
  const netlinkWrites = new Counter({
    name: 'netfence_ipset_netlink_writes_total',
    help: 'ipset steps (member adds and deletes of one sync step, batched) written over netlink and acknowledged by the kernel.',
    registers,
  });
  netlinkWrites.inc(0);
  return {
    setIpsetWriter: (mode) => {
      writer.set({ mode: 'netlink' }, mode === 'netlink' ? 1 : 0);
      writer.set({ mode: 'restore' }, mode === 'restore' ? 1 : 0);
    },
    countIpsetNetlinkWrite: () => netlinkWrites.inc(),
  };
}
