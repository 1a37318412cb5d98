// deploy/rbac.yaml grants the daemon exactly the verbs its code uses, no more (least privilege, as
// kube-network-policies grants list/watch only) and no fewer. What the code uses is measured, not listed by
// hand: the daemon's own API wiring (daemon/cluster-source.ts openSource, as daemon/start.ts opens it, and
// its Event writer) runs against the fake API server, with WatchList streams and with paged lists, and each
// request becomes the (group, resource, verb) the API server's RBAC authorizer checks (k8s.io/apiserver
// RequestInfo: GET of a collection is list, with watch=true watch, of a name get; POST create; PATCH patch).
// Discovery (/apis/GROUP/VERSION) is a non-resource URL every authenticated user may read.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { kubeEventsClient, policyEvent } from '../../../src/cluster/policy-events.js';
import { loadConfig } from '../../../src/config/load.js';
import { openSource } from '../../../src/daemon/cluster-source.js';
import { createLogger } from '../../../src/log.js';
import type { Metrics } from '../../../src/observe/metrics.js';
import { FakeApiServer, writeKubeconfig, type RequestRecord } from '../../fakes/fake-apiserver.js';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** `group/resource verb` for each (group, resource, verb) the ClusterRole grants. */
function granted(): Set<string> {
  const docs = parseAllDocuments(readFileSync(join(process.cwd(), 'deploy', 'rbac.yaml'), 'utf8')).map(
    (d) => d.toJS() as { kind: string; rules?: Rule[] },
  );
  const role = docs.find((d) => d.kind === 'ClusterRole')!;
  return new Set(role.rules!.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res} ${v}`)))));
}

/** The RBAC attributes of one request, or undefined for a non-resource URL (discovery). */
function attributes(r: RequestRecord): string | undefined {
  const parts = r.path.split('/').filter(Boolean);
  const [prefix] = parts;
  const group = prefix === 'api' ? '' : parts[1]!;
  let rest = parts.slice(prefix === 'api' ? 2 : 3);
  if (rest.length === 0) return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [resource, name] = rest;
  const verbs: Record<string, string> = { POST: 'create', PATCH: 'patch', PUT: 'update', DELETE: 'delete' };
  const verb = r.method === 'GET' ? (r.watch ? 'watch' : name !== undefined ? 'get' : 'list') : verbs[r.method];
  return `${group}/${resource!} ${verb ?? r.method}`;
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every request the daemon's API code makes: its source (start-up and a change), and a policy Event written twice. */
async function daemonRequests(watchList: boolean): Promise<RequestRecord[]> {
  const server = new FakeApiServer({ clusterNetworkPolicyCrd: true, watchList });
  await server.start();
  const dir = mkdtempSync(join(tmpdir(), 'nf-rbac-'));
  try {
    server.create({ kind: 'Namespace', metadata: { name: 'shop' } });
    server.create({ kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.1.0/24' } });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(writeKubeconfig(server, dir));
    const { config } = loadConfig({ argvFlags: { 'node-name': 'n1', 'watch-list': watchList }, env: {} });
    const logger = createLogger({ level: 'error', format: 'text' });
    const metrics = { countApiRefusal: () => undefined } as unknown as Metrics;
    const source = openSource(
      config,
      { resources: [], kubeconfig: undefined, logger },
      kubeConfig,
      metrics,
      () => undefined,
      () => undefined,
    );
    try {
      await source.synced;
      // A change arrives through the watches.
      server.create({ kind: 'Namespace', metadata: { name: 'later' } });
      await waitFor('the new namespace', () => source.snapshot().namespaces.some((n) => n.name === 'later'));
      // The Event writer: created once, then found taken and its series patched.
      const event = policyEvent(
        { object: 'NetworkPolicy shop/db', field: 'spec.ingress[0]', message: 'cannot be enforced', severity: 'error' },
        'n1',
        new Date(),
      )!;
      const events = kubeEventsClient(kubeConfig);
      expect(await events.create(event)).toBe(true);
      expect(await events.create(event)).toBe(false);
      await events.setSeries(event.metadata.namespace, event.metadata.name, { count: 2, lastObservedTime: event.eventTime });
    } finally {
      await source.stop();
    }
    return [...server.requests];
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('deploy/rbac.yaml: the verbs the daemon uses, exactly', () => {
  it('grants what the daemon asks for with WatchList streams and with paged lists, and nothing else', async () => {
    const used = new Set([...(await daemonRequests(true)), ...(await daemonRequests(false))].flatMap((r) => attributes(r) ?? []));
    expect([...granted()].sort()).toEqual([...used].sort());
  });
});
