// /flows names pods, addresses and policies. With `listenAddress` on a node address it used to be readable by
// anything that could reach the node; now a client other than the node itself must bring a bearer token the
// API server knows (TokenReview) for a user RBAC lets `get` /flows (SubjectAccessReview), as kube-rbac-proxy
// checks. The daemon's observability (src/daemon/observability.ts) is started as the daemon starts it,
// against the fake API server, on this machine's own non-loopback address, so requests to it come from a
// peer other than loopback. A loopback listener is always there beside it, for the kubelet's probes.

import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_CONFIG, type DaemonConfig } from '../../../src/config/schema.js';
import { startObservability, type Observability } from '../../../src/daemon/observability.js';
import { nullLogger } from '../../../src/log.js';
import { FakeApiServer } from '../../fakes/fake-apiserver.js';
import { metricValue } from '../../helpers/daemon-harness.js';

/** An IPv4 address of this machine other than loopback (what a node address is to the daemon). */
const nodeAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;

const describeWithAddress = nodeAddress ? describe : describe.skip;
if (!nodeAddress) console.warn('flows-auth: this machine has no IPv4 address other than loopback; skipped');

const config = (): DaemonConfig => ({
  ...DEFAULT_CONFIG,
  nodeName: 'n1',
  listenAddress: `${nodeAddress}:0`,
  dryRun: false,
  flowLogs: true,
});

async function get(url: string, token?: string): Promise<{ status: number; body: string; authenticate: string | null }> {
  const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text(), authenticate: res.headers.get('www-authenticate') };
}

describeWithAddress('/flows on a node address', () => {
  let api: FakeApiServer;
  let dir: string;
  let obs: Observability | undefined;
  let remote: string;
  let local: string;
  beforeAll(() => import('@kubernetes/client-node'), 60_000);
  beforeEach(async () => {
    api = new FakeApiServer();
    await api.start();
    dir = mkdtempSync(join(tmpdir(), 'nft-flows-auth-'));
    api.tokens.set('reader-token', { username: 'system:serviceaccount:ops:reader', groups: ['system:serviceaccounts'] });
    api.tokens.set('other-token', { username: 'system:serviceaccount:ops:other', groups: ['system:serviceaccounts'] });
    api.nonResourceGrants.add('system:serviceaccount:ops:reader get /flows');
  });
  afterEach(async () => {
    await obs?.server.stop();
    obs = undefined;
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (withApi: boolean): Promise<Observability> => {
    let kubeConfig: KubeConfig | undefined;
    if (withApi) {
      kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(api.writeKubeconfig(dir));
    }
    obs = await startObservability(config(), nullLogger, kubeConfig);
    remote = `http://${nodeAddress}:${obs.listen.port}`;
    expect(obs.loopback).toBeDefined();
    local = `http://127.0.0.1:${obs.loopback!.port}`;
    return obs;
  };

  it('a loopback listener is always there beside the node address: probes and /flows answered without a token', async () => {
    await start(true);
    expect((await get(`${local}/healthz`)).status).toBe(200);
    expect((await get(`${local}/flows`)).status).toBe(200);
    // Probes and metrics from off the node are unchanged; only /flows asks who is asking.
    expect((await get(`${remote}/healthz`)).status).toBe(200);
    expect((await get(`${remote}/metrics`)).status).toBe(200);
    expect(api.reviews).toBe(0);
  });

  it('from off the node: no token 401, an unknown token 401, a token RBAC does not allow 403, an allowed one 200', async () => {
    const { metrics } = await start(true);
    const none = await get(`${remote}/flows`);
    expect(none).toMatchObject({ status: 401, authenticate: 'Bearer' });
    expect(none.body).not.toContain('records');
    expect((await get(`${remote}/flows`, 'made-up')).status).toBe(401);
    const other = await get(`${remote}/flows?namespace=prod`, 'other-token');
    expect(other.status).toBe(403);
    expect(other.body).toContain('system:serviceaccount:ops:other may not get /flows');
    const reader = await get(`${remote}/flows`, 'reader-token');
    expect(reader.status).toBe(200);
    expect(JSON.parse(reader.body)).toEqual({ records: [] });
    const m = await metrics.render();
    expect(metricValue(m, 'netfence_flows_requests_refused_total{reason="unauthenticated"}')).toBe(2);
    expect(metricValue(m, 'netfence_flows_requests_refused_total{reason="forbidden"}')).toBe(1);
  });

  it('a decision is reused: a burst of one token is one TokenReview and one SubjectAccessReview', async () => {
    await start(true);
    for (let i = 0; i < 20; i++) expect((await get(`${remote}/flows`, 'reader-token')).status).toBe(200);
    expect(api.reviews).toBe(2);
  });

  it('an API server that cannot be asked: refused (503), fail closed', async () => {
    await start(true);
    await api.stop();
    const r = await get(`${remote}/flows`, 'reader-token');
    expect(r.status).toBe(503);
    expect(r.body).toContain('cannot check who is asking');
    await api.start();
  });

  it('no API (manifest mode): nothing can say who asks, so only loopback reads /flows', async () => {
    await start(false);
    expect((await get(`${remote}/flows`, 'reader-token')).status).toBe(403);
    expect((await get(`${local}/flows`)).status).toBe(200);
  });
});
