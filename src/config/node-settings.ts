// This node's settings for each compile: configuration, with the pod CIDRs podCidrsOf chooses (the Node
// object in the snapshot may bring them late; flannel's lease is read once, when the source is made). The
// daemon and the one-shot commands both read them here, so both learn the lease and warn alike. `why` and
// `map`, compiling every node, read each node's here too (settingsPerNode).

import { readFlannelSubnetEnv } from './flannel.js';
import { podCidrsOf, toNodeSettings } from './load.js';
import type { DaemonConfig } from './schema.js';
import type { ClusterSnapshot, NodeSettings } from '../model/index.js';

/** Where the pod CIDRs are reported: a warning when none is known, and (if given) each change. */
export interface NodeSettingsLog {
  warn(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
}

export interface NodeSettingsSource {
  /** The settings for a compile of this snapshot. */
  settings(snapshot: ClusterSnapshot): NodeSettings;
  /** The settings of the last compile; none before the first. */
  readonly last: () => NodeSettings | undefined;
}

/** Said when no source names this node's pod CIDRs (see DaemonConfig.unknownPods). */
export const NO_POD_CIDR = 'no pod CIDR known for this node: unknown local pods cannot be handled fail-closed';

/**
 * Reads flannel's lease (an unreadable or absent lease is no lease), then settles the settings per snapshot.
 * The log hears of the pod CIDRs when they change, not on every compile.
 */
export async function nodeSettingsSource(config: DaemonConfig, log?: NodeSettingsLog): Promise<NodeSettingsSource> {
  const flannel = (await readFlannelSubnetEnv(config.flannelSubnetEnv).catch(() => undefined))?.podCidrs ?? [];
  let reported: string | undefined;
  let last: NodeSettings | undefined;
  return {
    settings(snapshot) {
      const s = toNodeSettings(config, podCidrsOf(config, snapshot, { flannel }));
      const cidrs = s.podCidrs.join(',');
      if (cidrs !== reported) {
        reported = cidrs;
        if (s.podCidrs.length === 0) log?.warn(NO_POD_CIDR, { node: config.nodeName });
        else log?.info?.('pod CIDRs of this node', { podCidrs: s.podCidrs });
      }
      last = s;
      return s;
    },
    last: () => last,
  };
}

/** One compile's settings (a one-shot command): the lease read, the warning given if no pod CIDR is known. */
export async function nodeSettingsOnce(config: DaemonConfig, snapshot: ClusterSnapshot, log?: NodeSettingsLog): Promise<NodeSettings> {
  return (await nodeSettingsSource(config, log)).settings(snapshot);
}

/** Each node's settings as its own daemon would have them: this command's configuration, that node's name and pod CIDRs. */
export function settingsPerNode(config: DaemonConfig, snapshot: ClusterSnapshot): (node: string) => NodeSettings {
  const cache = new Map<string, NodeSettings>();
  return (node) => {
    let settings = cache.get(node);
    if (!settings) {
      // --pod-cidr names one node's range; every node here takes its own from its Node object.
      const nodeConfig = { ...config, nodeName: node, podCidrs: [] };
      settings = toNodeSettings(nodeConfig, podCidrsOf(nodeConfig, snapshot));
      cache.set(node, settings);
    }
    return settings;
  };
}
