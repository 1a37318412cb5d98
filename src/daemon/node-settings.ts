// The node's settings for each compile: configuration, with the pod CIDRs podCidrsOf chooses (the Node
// object in the snapshot may bring them late). The log says when they change, not on every sync.

import { readFlannelSubnetEnv } from '../config/flannel.js';
import { podCidrsOf, toNodeSettings } from '../config/load.js';
import type { DaemonConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { ClusterSnapshot, NodeSettings } from '../model/index.js';

export interface NodeSettingsSource {
  /** The settings for a compile of this snapshot. */
  settings(snapshot: ClusterSnapshot): NodeSettings;
  /** The settings of the last compile; none before the first. */
  readonly last: () => NodeSettings | undefined;
}

/** flannel's lease is read once, at start-up. */
export async function nodeSettingsSource(config: DaemonConfig, logger: Logger): Promise<NodeSettingsSource> {
  const flannel = (await readFlannelSubnetEnv(config.flannelSubnetEnv).catch(() => undefined))?.podCidrs ?? [];
  let lastCidrs = '';
  let last: NodeSettings | undefined;
  return {
    settings(snapshot) {
      const s = toNodeSettings(config, podCidrsOf(config, snapshot, { flannel }));
      if (s.podCidrs.join(',') !== lastCidrs) {
        lastCidrs = s.podCidrs.join(',');
        if (s.podCidrs.length === 0) logger.warn('no pod CIDR known for this node: unknown local pods cannot be handled');
        else logger.info('pod CIDRs of this node', { podCidrs: s.podCidrs });
      }
      last = s;
      return s;
    },
    last: () => last,
  };
}
