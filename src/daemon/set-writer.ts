// The daemon's ipset writer: member changes over netlink, everything else (and everything, after a refusal)
// through the kernel's `ipset restore`. Its mode is a metric from the start; a fallback is logged once.

import type { DaemonConfig } from '../config/schema.js';
import { createIpsetWriter, type IpsetWriter } from '../dataplane/ipset-writer.js';
import type { Kernel } from '../dataplane/kernel.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observe/metrics.js';

export async function openSetWriter(
  config: Pick<DaemonConfig, 'ipsetNetlink' | 'dryRun'>,
  kernel: Pick<Kernel, 'ipsetRestore'>,
  netns: string | undefined,
  metrics: Pick<Metrics, 'setIpsetWriter' | 'countIpsetNetlinkWrite'>,
  logger: Logger,
): Promise<IpsetWriter> {
  const log = logger.child({ component: 'ipset-writer' });
  const writer = createIpsetWriter({
    netns,
    // A dry run writes nothing: no socket or netns relay to open.
    netlink: config.ipsetNetlink && !config.dryRun,
    restore: (text) => kernel.ipsetRestore(text),
    onFallback: (reason) => {
      log.warn('ipset member changes fall back to ipset restore (one process per change)', { reason });
      metrics.setIpsetWriter('restore');
    },
    onNetlinkWrite: () => metrics.countIpsetNetlinkWrite(),
  });
  const state = await writer.prepare();
  metrics.setIpsetWriter(state.mode);
  if (state.mode === 'netlink') log.info('ipset member changes go over netlink');
  else if (!config.ipsetNetlink) log.info('ipset member changes go through ipset restore', { reason: state.reason });
  return writer;
}
