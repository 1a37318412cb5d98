// What the other layers take from the configuration, each in the shape that layer wants: the names
// netfence owns, the byte limits of a manifest read, and which kernel to open.

import type { ManifestLimits } from '../model/index.js';
import type { DaemonConfig } from './schema.js';

/** The chain and ipset prefixes: cleanup and drift repair touch only names that start with them. */
export const ownershipOf = (config: Pick<DaemonConfig, 'chainPrefix' | 'ipsetPrefix'>) => ({
  chainPrefix: config.chainPrefix,
  ipsetPrefix: config.ipsetPrefix,
});

/** The byte limits of a `--resources` read. */
export const manifestLimits = (config: Pick<DaemonConfig, 'manifestMaxFileBytes' | 'manifestMaxTotalBytes'>): ManifestLimits => ({
  maxFileBytes: config.manifestMaxFileBytes,
  maxTotalBytes: config.manifestMaxTotalBytes,
});

/** Which kernel to work on: the namespace, the configured backend (none: detect), IPv6 or not. */
export const kernelOptions = (config: Pick<DaemonConfig, 'backend' | 'ipv6'>, netns: string | undefined) => ({
  netns,
  backend: config.backend === 'auto' ? undefined : config.backend,
  ipv6: config.ipv6,
});
