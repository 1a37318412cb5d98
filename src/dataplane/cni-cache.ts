// The libcni result cache: `<cacheDir>/results/<network>-<containerID>-<ifname>`, written by the container
// runtime (containerd's go-cni, CRI-O's ocicni) after a successful CNI ADD and removed on DEL. For the
// bridge plugin (flannel delegates to it) `result.interfaces` is [bridge, host veth, container veth] and
// `result.ips[].interface` points at the container veth: so one file binds the host-side bridge port to
// the pod's addresses (research upstream-behaviour §4.2). Reading it needs root (mode 0600).

import { watch } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One pod interface as the runtime recorded it. */
export interface CniBinding {
  /** The cache file's name: `<network>-<containerID>-<ifname>`. */
  readonly key: string;
  readonly containerId: string;
  /** The host end of the pod's veth: the bridge port its frames enter through. */
  readonly hostVeth: string;
  /** Addresses without prefix length, any family. */
  readonly ips: readonly string[];
  /** The pod-side MAC, when recorded. */
  readonly mac?: string;
}

interface CniInterface {
  readonly name?: unknown;
  readonly mac?: unknown;
  readonly sandbox?: unknown;
}

/**
 * Parses one cache file; undefined when it is not a bridge-style result (no host veth, no address).
 * The host veth is the interface without a `sandbox` that is not the bridge; the addresses are those
 * whose `interface` index names an interface inside the sandbox.
 */
export function parseCniResult(key: string, text: string, bridge: string): CniBinding | undefined {
  let doc: { containerId?: unknown; result?: { interfaces?: unknown; ips?: unknown } };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    return undefined;
  }
  const interfaces = Array.isArray(doc.result?.interfaces) ? (doc.result.interfaces as CniInterface[]) : [];
  const ips = Array.isArray(doc.result?.ips) ? (doc.result.ips as { address?: unknown; interface?: unknown }[]) : [];
  const host = interfaces.find((i) => typeof i.name === 'string' && i.name !== bridge && (i.sandbox === undefined || i.sandbox === ''));
  const inSandbox = (index: unknown): boolean =>
    typeof index === 'number' && typeof interfaces[index]?.sandbox === 'string' && interfaces[index]?.sandbox !== '';
  const addresses = ips
    .filter((ip) => typeof ip.address === 'string' && (ip.interface === undefined || inSandbox(ip.interface)))
    .map((ip) => (ip.address as string).split('/')[0]!);
  if (!host || addresses.length === 0) return undefined;
  const podIface = interfaces.find((i) => typeof i.sandbox === 'string' && i.sandbox !== '');
  return {
    key,
    containerId: typeof doc.containerId === 'string' ? doc.containerId : '',
    hostVeth: host.name as string,
    ips: addresses,
    ...(typeof podIface?.mac === 'string' ? { mac: podIface.mac } : {}),
  };
}

/** Every readable binding under `<cacheDir>/results`; a missing directory is `undefined` (no cache on this node). */
export async function readCniCache(cacheDir: string, bridge: string): Promise<CniBinding[] | undefined> {
  const dir = join(cacheDir, 'results');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const out: CniBinding[] = [];
  for (const name of names.sort()) {
    // A file removed between readdir and read is a pod that just went: skip it.
    const text = await readFile(join(dir, name), 'utf8').catch(() => undefined);
    const binding = text === undefined ? undefined : parseCniResult(name, text, bridge);
    if (binding) out.push(binding);
  }
  return out;
}

/**
 * Calls `onChange` when a file appears in or leaves `<cacheDir>/results` (inotify), so a new pod's port
 * opens as soon as its CNI ADD finished. Returns the unsubscribe; a directory that does not exist (yet)
 * is not watched, and the caller's poll covers it.
 */
export function watchCniCache(cacheDir: string, onChange: () => void): () => void {
  try {
    const watcher = watch(join(cacheDir, 'results'), { persistent: false }, () => onChange());
    watcher.on('error', () => undefined);
    return () => watcher.close();
  } catch {
    return () => undefined;
  }
}
