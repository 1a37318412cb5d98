// The kernel read of `diff`, `apply` and `cleanup`: every tool run once and all at the same time (the
// backend detection's own saves are the filter-table read, see openKernelAndRead), started before the
// command loads and compiles the cluster.
//
// In this thread, not on a worker: measured on the shared 2-core machine (diff on a live large node, 11
// runs interleaved, load ~17-20), a worker that read and parsed beside the compile cost 830 ms of CPU and
// 1,650 ms wall against 620 ms and 1,140 ms here; starting a worker's Node environment is ~50 ms of CPU and
// more under load, and the parse it takes off this thread is ~40 ms. On an idle machine it would save
// about that 40 ms of wall time; on a busy one it costs more than it saves.

// Imported statically, not on first use: readKernel then spawns every tool synchronously, before the
// command's loading and compiling hold the event loop (an import() would resolve only after them).
import { openDecidedKernel, openKernelAndRead, type Kernel, type KernelOptions } from '../dataplane/kernel.js';
import type { Logger } from '../log.js';
import type { IpFamily } from '../model/index.js';
import { observeFamily, type ObservedFamily, type Ownership } from '../plan/observed.js';
import { Syncer } from '../reconcile/syncer.js';

export interface KernelReadRequest {
  readonly kernel: KernelOptions;
  readonly own: Ownership;
}

/** The kernel (tools chosen by the read's backend) and the read as the planner observes it, both under way. */
export interface KernelReading {
  readonly kernel: Promise<Kernel>;
  readonly observed: Promise<ReadonlyMap<IpFamily, ObservedFamily>>;
}

/** Starts reading the kernel; a failure is thrown where the kernel or the read is awaited. */
export function readKernel(request: KernelReadRequest): KernelReading {
  const opened = openKernelAndRead(request.kernel);
  const kernel = opened.then((o) => openDecidedKernel(o.kernel.backend, request.kernel));
  const observed = opened.then(({ read }) => {
    const out = new Map<IpFamily, ObservedFamily>();
    for (const [family, text] of read.filters) out.set(family, observeFamily(family, text, read.ipsets, request.own));
    return out;
  });
  kernel.catch(() => undefined);
  observed.catch(() => undefined);
  return { kernel, observed };
}

/**
 * A syncer on the kernel being read (readKernel), started before the command loads and compiles the
 * cluster; the plan uses what it read. A failure surfaces where the result is awaited, as it did when the
 * kernel was read after compiling.
 */
export async function kernelSyncer(request: KernelReadRequest, logger: Logger): Promise<Syncer> {
  const reading = readKernel(request);
  const syncer = new Syncer(await reading.kernel, request.own, logger);
  syncer.useRead(reading.observed);
  return syncer;
}
