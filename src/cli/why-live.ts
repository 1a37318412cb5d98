// `why --live`: how each node's daemon is reached (--daemon-url NODE=URL, else the API server's pod proxy)
// and how the live report is printed; the asking and the comparing are commands/why-live.ts.

import { direct, podProxy, type DaemonReach, type LiveReport } from '../commands/why-live.js';
import type { DaemonConfig } from '../config/schema.js';
import { wrap } from '../trace/index.js';
import { kubeConfigFrom, resourcePaths, UsageError, type Parsed } from './context.js';

export { liveReport } from '../commands/why-live.js';

export function formatLive(live: LiveReport): string {
  const lines = ['live:'];
  for (const n of live.nodes) {
    if (n.error !== undefined) {
      lines.push(...wrap(`cannot reach its daemon: ${n.error}`, `  ${n.node}  `, '      '));
      continue;
    }
    lines.push(`  ${n.node}  ${n.ready?.ok === true ? 'in sync' : 'NOT in sync'} (/readyz: ${n.ready?.text ?? '?'})`);
    for (const d of n.disagreements) lines.push(...wrap(d, '    DISAGREES: ', '      '));
    for (const l of n.learned?.text ?? []) lines.push(...wrap(l, '    ', '      '));
    for (const note of n.notes) lines.push(...wrap(note, '    ', '      '));
  }
  return `${lines.join('\n')}\n`;
}

/** --daemon-url NODE=URL for the nodes named; the API server's pod proxy for the others, when there is an API. */
export async function reachFor(parsed: Parsed, config: Pick<DaemonConfig, 'listenAddress'>): Promise<DaemonReach> {
  const urls = new Map<string, string>();
  for (const entry of (parsed.values['daemon-url'] as string[] | undefined) ?? []) {
    const m = /^([^=]+)=(https?:\/\/.+)$/.exec(entry);
    if (!m) throw new UsageError(`--daemon-url must be NODE=http://HOST:PORT, not "${entry}"`);
    urls.set(m[1]!, m[2]!.replace(/\/$/, ''));
  }
  const inCluster = (process.env['KUBERNETES_SERVICE_HOST'] ?? '') !== '';
  const kubeconfig = parsed.values['kubeconfig'] as string | undefined;
  const context = parsed.values['context'] as string | undefined;
  const apiAvailable = kubeconfig !== undefined || context !== undefined || (inCluster && resourcePaths(parsed).length === 0);
  const proxy = apiAvailable
    ? podProxy(
        await kubeConfigFrom(kubeconfig, context),
        (parsed.values['daemon-namespace'] as string | undefined) ?? 'kube-system',
        config,
      )
    : undefined;
  return {
    async get(node, path) {
      const base = urls.get(node);
      if (base !== undefined) return direct(`${base}${path}`);
      if (proxy) return proxy.get(node, path);
      throw new Error(`no way to ask it: pass --daemon-url ${node}=http://HOST:PORT, or --kubeconfig F for the API server's pod proxy`);
    },
  };
}
