// The kernel and the log as the syncer needs them: src/dataplane provides the real kernel, tests and
// benchmarks may fake it.

import type { IpFamily } from '../model/index.js';
import type { IpsetOp } from '../render/index.js';

/** The kernel as the syncer needs it; src/dataplane provides the real one, tests may fake it. */
export interface KernelPort {
  saveFilter(family: IpFamily): Promise<string>;
  restoreFilter(family: IpFamily, text: string): Promise<void>;
  ipsetSave(): Promise<string>;
  ipsetRestore(text: string): Promise<void>;
  /**
   * Writes one ipset step given as ops (the same as its restore text); the daemon's port sends member changes
   * over netlink (dataplane/ipset-writer.ts). Absent: the step's text goes to `ipsetRestore`.
   */
  ipsetApply?(ops: readonly IpsetOp[]): Promise<void>;
  /** Whether this family can be programmed at all (ip6tables present, IPv6 enabled). */
  supports(family: IpFamily): boolean;
}

export interface SyncLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
}
