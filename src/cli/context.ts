// Shared plumbing of the commands: flags → config → snapshot → node settings → kernel.

import { delimiter } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadManifests } from '../cluster/manifests.js';
import { readFlannelSubnetEnv } from '../config/flannel.js';
import { loadConfig, podCidrsOf, toNodeSettings } from '../config/load.js';
import type { DaemonConfig } from '../config/schema.js';
import { kernelOptions as kernelOptionsOf } from '../config/views.js';
import type { KernelOptions } from '../dataplane/kernel.js';
import { createLogger, type Logger } from '../log.js';
import type { ClusterSnapshot, ManifestLimits, NodeSettings, Problem } from '../model/index.js';
import { UsageError, type Parsed } from './options.js';

// Commands parse their arguments with parseCommand (command-specs.ts), from the same option definitions
// their --help prints.
export { UsageError, type Parsed } from './options.js';
export { parseCommand } from './command-specs.js';
export { manifestLimits, ownershipOf } from '../config/views.js';

export function configFrom(parsed: Parsed, requireNodeName = true): DaemonConfig {
  return loadConfig({ argvFlags: parsed.values, env: process.env, requireNodeName }).config;
}

export function cliLogger(config: Pick<DaemonConfig, 'logLevel'>, format: 'json' | 'text' = 'text'): Logger {
  return createLogger({ level: config.logLevel, format });
}

export const resourcePaths = (parsed: Parsed): string[] => (parsed.values['resources'] as string[] | undefined) ?? [];
export const netnsOf = (parsed: Parsed): string | undefined => parsed.values['netns'] as string | undefined;

export interface LoadedCluster {
  readonly snapshot: ClusterSnapshot;
  readonly problems: readonly Problem[];
}

export function loadResources(parsed: Parsed, limits: ManifestLimits): LoadedCluster {
  const paths = resourcePaths(parsed);
  if (paths.length === 0) throw new UsageError('--resources PATH is required (files or directories of manifests)');
  const loaded = loadManifests(paths, limits);
  return { snapshot: loaded.snapshot, problems: loaded.problems };
}

/** The cluster from `--resources`, else from the API (`--kubeconfig F`, or in-cluster config): one full list. */
export async function loadCluster(parsed: Parsed, logger: Logger, limits: ManifestLimits, timeoutMs = 30_000): Promise<LoadedCluster> {
  if (resourcePaths(parsed).length > 0) return loadResources(parsed, limits);
  const kubeConfig = await kubeConfigFrom(
    parsed.values['kubeconfig'] as string | undefined,
    parsed.values['context'] as string | undefined,
  );
  // Loaded here, not at the top: the Kubernetes client takes longer to load than most commands take to run.
  const { KubeSource } = await import('../cluster/kube-source.js');
  const source = new KubeSource({ kubeConfig, logger: logger.child({ component: 'source' }) });
  try {
    await Promise.race([
      source.synced,
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new UsageError(`timed out after ${timeoutMs / 1000} s listing the cluster from the API server`)),
          timeoutMs,
        ).unref(),
      ),
    ]);
    return { snapshot: source.snapshot(), problems: source.problems() };
  } finally {
    await source.stop();
  }
}

/**
 * `--kubeconfig F` (several files joined by the path delimiter are merged, as kubectl merges $KUBECONFIG),
 * else the in-cluster configuration; a usage error when neither is there. `context`: `--context`, as kubectl's.
 */
export async function kubeConfigFrom(file: string | undefined, context?: string): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kubeConfig = new KubeConfig();
  try {
    const [first, ...more] = (file ?? '').split(delimiter).filter((f) => f !== '');
    if (first !== undefined) {
      kubeConfig.loadFromFile(first);
      for (const f of more) {
        const next = new KubeConfig();
        next.loadFromFile(f);
        kubeConfig.mergeConfig(next, true);
      }
    } else kubeConfig.loadFromCluster();
  } catch (err) {
    throw new UsageError(`give --resources PATH or --kubeconfig F (no in-cluster config: ${(err as Error).message})`);
  }
  if (context !== undefined) {
    if (!kubeConfig.getContextObject(context)) throw new UsageError(`--context ${context}: no such context in ${file ?? 'the kubeconfig'}`);
    kubeConfig.setCurrentContext(context);
  }
  return kubeConfig;
}

/** This node's settings, with its pod CIDRs as podCidrsOf chooses them (flannel's lease read here). */
export async function nodeSettings(config: DaemonConfig, snapshot: ClusterSnapshot, logger?: Logger): Promise<NodeSettings> {
  const fromFlannel = (await readFlannelSubnetEnv(config.flannelSubnetEnv).catch(() => undefined))?.podCidrs ?? [];
  const settings = toNodeSettings(config, podCidrsOf(config, snapshot, { flannel: fromFlannel }));
  if (settings.podCidrs.length === 0) {
    logger?.warn('no pod CIDR known for this node: unknown local pods cannot be handled fail-closed', { node: config.nodeName });
  }
  return settings;
}

/** Which kernel the command works on: the configured backend and IPv6, in `--netns` if given. */
export const kernelOptions = (config: DaemonConfig, parsed: Parsed): KernelOptions => kernelOptionsOf(config, netnsOf(parsed));
