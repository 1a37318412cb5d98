// A command's cluster: manifests (`--resources`), else one full list from the API server, with the
// failures retrying cannot mend told apart; and the check that the node named is one the cluster knows.

import { delimiter } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadManifests } from '../cluster/manifests.js';
import type { Logger } from '../log.js';
import type { ClusterSnapshot, ManifestLimits, Problem } from '../model/index.js';
import { CommandFailure, UsageError } from './errors.js';

export interface LoadedCluster {
  readonly snapshot: ClusterSnapshot;
  readonly problems: readonly Problem[];
}

/** Where a command's cluster comes from: manifest files, else the API (a kubeconfig, else in-cluster). */
export interface ClusterFrom {
  /** `--resources`: files or directories of manifests. */
  readonly resources: readonly string[];
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
}

export function loadResources(paths: readonly string[], limits: ManifestLimits): LoadedCluster {
  if (paths.length === 0) throw new UsageError('--resources PATH is required (files or directories of manifests)');
  const loaded = loadManifests(paths, limits);
  return { snapshot: loaded.snapshot, problems: loaded.problems };
}

/**
 * The cluster from `--resources`, else from the API (`--kubeconfig F`, or in-cluster config): one full list.
 * A failure retrying cannot mend (nothing listens, no such host, a certificate or credentials refused) ends
 * the command at once, naming it; past `timeoutMs`, the last failure is named with the timeout.
 */
export async function loadCluster(from: ClusterFrom, logger: Logger, limits: ManifestLimits, timeoutMs = 30_000): Promise<LoadedCluster> {
  if (from.resources.length > 0) return loadResources(from.resources, limits);
  const kubeConfig = await kubeConfigFrom(from.kubeconfig, from.context);
  const server = kubeConfig.getCurrentCluster()?.server ?? 'of the kubeconfig';
  let last: string | undefined;
  let fatal: (err: CommandFailure) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (fatal = reject));
  // Loaded here, not at the top: the Kubernetes client takes longer to load than most commands take to run.
  const { KubeSource } = await import('../cluster/kube-source.js');
  const source = new KubeSource({
    kubeConfig,
    logger: logger.child({ component: 'source' }),
    onFailure: (err) => {
      last = describeApiFailure(err);
      if (!isLasting(err)) return false;
      fatal(new CommandFailure(`cannot list the cluster from the API server ${server}: ${last}`));
      return true;
    },
  });
  try {
    await Promise.race([
      source.synced,
      failed,
      new Promise((_, reject) =>
        setTimeout(
          () =>
            reject(
              new CommandFailure(
                `timed out after ${timeoutMs / 1000} s listing the cluster from the API server ${server}${last ? ` (last failure: ${last})` : ''}`,
              ),
            ),
          timeoutMs,
        ).unref(),
      ),
    ]);
    return { snapshot: source.snapshot(), problems: source.problems() };
  } finally {
    await source.stop();
  }
}

/** Errors and causes, outermost first. */
function causes(err: unknown): Error[] {
  const chain: Error[] = [];
  // Not `instanceof Error`: fetch's causes may come from another realm.
  for (let e = err; typeof e === 'object' && e !== null && 'message' in e && chain.length < 5; e = (e as Error).cause)
    chain.push(e as Error);
  return chain;
}

const systemCode = (err: unknown): string | undefined =>
  causes(err)
    .map((e) => (e as { code?: unknown }).code)
    .find((c): c is string => typeof c === 'string' && c !== '');

const httpStatus = (err: unknown): number | undefined =>
  causes(err)
    .map((e) => (e as { statusCode?: unknown; code?: unknown }).statusCode ?? (e as { code?: unknown }).code)
    .find((c): c is number => typeof c === 'number');

/** Nothing listens, no such host, an unreachable network, a certificate refused, or the credentials refused. */
function isLasting(err: unknown): boolean {
  const code = systemCode(err);
  const status = httpStatus(err);
  if (status === 401 || status === 403) return true;
  return (
    code !== undefined &&
    /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|ERR_TLS_)/.test(code)
  );
}

/** `connect ECONNREFUSED 127.0.0.1:1`, naming the system code when the message does not. */
export function describeApiFailure(err: unknown): string {
  const chain = causes(err);
  const innermost = chain.at(-1);
  // node-fetch: "request to https://…/api/v1/pods?… failed, reason: connect ECONNREFUSED 127.0.0.1:6443".
  const message = (innermost?.message ?? String(err)).replace(/^request to \S+ failed, reason: /, '');
  const code = systemCode(err);
  const status = httpStatus(err);
  const named = code !== undefined && !message.includes(code) ? `${code}: ${message}` : message;
  return status !== undefined && !named.includes(String(status)) ? `${status} ${named}` : named;
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

/**
 * A node name the cluster does not know would compile to a ruleset that selects no pod (every local pod's
 * chains gone) and exit 0: refused, naming the nodes it does know (Nodes, and the nodes pods are on). Only
 * where Nodes are listed: an API server always lists them; manifests without any cannot tell a node that has
 * no pods from a misspelt one.
 */
export function requireKnownNode(snapshot: ClusterSnapshot, nodeName: string, source: string): void {
  if (snapshot.nodes.length === 0) return;
  const known = [
    ...new Set([...snapshot.nodes.map((n) => n.name), ...snapshot.pods.flatMap((p) => (p.nodeName ? [p.nodeName] : []))]),
  ].sort();
  if (known.includes(nodeName)) return;
  const shown = known.length > 8 ? `${known.slice(0, 8).join(', ')}, … (${known.length})` : known.join(', ');
  throw new CommandFailure(`--node-name ${nodeName}: no such node in ${source} (nodes: ${shown})`);
}
