// Shared plumbing of the commands: flags → config → snapshot → node settings → kernel.

import {
  loadCluster as loadClusterFrom,
  loadResources as loadResourcesFrom,
  type ClusterFrom,
  type LoadedCluster,
} from '../commands/cluster.js';
import { loadConfig } from '../config/load.js';
import type { DaemonConfig } from '../config/schema.js';
import { kernelOptions as kernelOptionsOf } from '../config/views.js';
import { createLogger, type Logger } from '../log.js';
import type { ManifestLimits } from '../model/index.js';
import type { Parsed } from './options.js';

// Commands parse their arguments with parseCommand (command-specs.ts), from the same option definitions
// their --help prints.
export { UsageError, type Parsed } from './options.js';
export { parseCommand } from './command-specs.js';
export { manifestLimits, ownershipOf } from '../config/views.js';
export { kubeConfigFrom, requireKnownNode, type LoadedCluster } from '../commands/cluster.js';

export function configFrom(parsed: Parsed, requireNodeName = true): DaemonConfig {
  return loadConfig({ argvFlags: parsed.values, env: process.env, requireNodeName }).config;
}

export function cliLogger(config: Pick<DaemonConfig, 'logLevel'>, format: 'json' | 'text' = 'text'): Logger {
  return createLogger({ level: config.logLevel, format });
}

export const resourcePaths = (parsed: Parsed): string[] => (parsed.values['resources'] as string[] | undefined) ?? [];
export const netnsOf = (parsed: Parsed): string | undefined => parsed.values['netns'] as string | undefined;

/** The cluster from `--resources`, else from the API (`--kubeconfig F`, `--context`, or in-cluster config). */
export const loadCluster = (parsed: Parsed, logger: Logger, limits: ManifestLimits, timeoutMs?: number): Promise<LoadedCluster> =>
  loadClusterFrom(clusterFrom(parsed), logger, limits, timeoutMs);

/** `--resources`, `--kubeconfig`, `--context`. */
export const clusterFrom = (parsed: Parsed): ClusterFrom => ({
  resources: resourcePaths(parsed),
  kubeconfig: parsed.values['kubeconfig'] as string | undefined,
  context: parsed.values['context'] as string | undefined,
});

export const loadResources = (parsed: Parsed, limits: ManifestLimits): LoadedCluster => loadResourcesFrom(resourcePaths(parsed), limits);

/** The `--saved` paths given (none: read the live kernel). */
export const savedPaths = (values: Readonly<Record<string, unknown>>): string[] => {
  const v = values['saved'];
  return Array.isArray(v) ? (v as string[]) : typeof v === 'string' ? [v] : [];
};

/** Which kernel the command works on: the configured backend and IPv6, in `--netns` if given. */
export const kernelOptions = (config: DaemonConfig, parsed: Parsed) => kernelOptionsOf(config, netnsOf(parsed));
