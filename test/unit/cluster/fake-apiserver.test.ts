// The fake API server's wire protocol, checked directly (kube-source.test.ts checks it with client-node).

import { FakeApiServer } from '../../fakes/fake-apiserver.js';

let server: FakeApiServer;
beforeEach(async () => {
  server = new FakeApiServer({ historyLimit: 3 });
  await server.start();
  server.create({ kind: 'Pod', metadata: { name: 'a', namespace: 'x' } });
  server.create({ kind: 'Pod', metadata: { name: 'b', namespace: 'y' } });
});
afterEach(() => server.stop());

/** Reads a watch stream until it ends (or `count` events arrived), returning `type name` lines. */
async function readWatch(path: string, count = Infinity, during?: () => void): Promise<string[]> {
  return (await rawWatch(server, path, count, during)).map((e) =>
    e.type === 'ERROR'
      ? `ERROR ${e.object.kind} ${e.object.code}`
      : `${e.type} ${e.object.metadata.name ?? e.object.metadata.resourceVersion}`,
  );
}

describe('FakeApiServer', () => {
  it.each([
    { name: 'all namespaces', path: '/api/v1/pods', items: ['a', 'b'] },
    { name: 'one namespace', path: '/api/v1/namespaces/y/pods', items: ['b'] },
    { name: 'another kind', path: '/apis/networking.k8s.io/v1/networkpolicies', items: [] },
  ])('lists $name', async ({ path, items }) => {
    const res = await fetch(`${server.url}${path}`);
    const body = (await res.json()) as { kind: string; metadata: { resourceVersion: string }; items: { metadata: { name: string } }[] };
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(body.metadata.resourceVersion).toBe(server.resourceVersion);
    expect(body.items.map((i) => i.metadata.name)).toEqual(items);
  });

  it('replays history after a resourceVersion, then streams live events', async () => {
    // rv 2 created a, rv 3 created b: the watch replays b, then gets the live deletion of a.
    const events = await readWatch('/api/v1/pods?watch=true&resourceVersion=2', 2, () =>
      server.delete({ kind: 'Pod', metadata: { name: 'a', namespace: 'x' } }),
    );
    expect(events).toEqual(['ADDED b', 'DELETED a']);
  });

  it('answers a watch from a compacted resourceVersion with a 410 Status event and ends the stream', async () => {
    server.compact();
    expect(await readWatch('/api/v1/pods?watch=true&resourceVersion=2')).toEqual(['ERROR Status 410']);
    expect(server.expiredWatches).toEqual(['pods']);
  });

  it('forgets events beyond the history limit', async () => {
    for (const n of ['c', 'd', 'e']) server.create({ kind: 'Pod', metadata: { name: n, namespace: 'x' } });
    expect(await readWatch('/api/v1/pods?watch=true&resourceVersion=1')).toEqual(['ERROR Status 410']);
  });

  it('starts with ADDED for everything without a resourceVersion, honours timeoutSeconds', async () => {
    expect(await readWatch('/api/v1/pods?watch=true&timeoutSeconds=1')).toEqual(['ADDED a', 'ADDED b']);
  });

  it('sends bookmarks only to watches that allow them', async () => {
    const rv = server.resourceVersion;
    const events = await readWatch(`/api/v1/pods?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`, 1, () =>
      setTimeout(() => server.bookmark(), 50),
    );
    expect(events).toEqual([`BOOKMARK ${rv}`]);
    const without = await readWatch(`/api/v1/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=1`, Infinity, () =>
      setTimeout(() => server.bookmark(), 50),
    );
    expect(without).toEqual([]);
  });

  it('restarts on the same port with its state', async () => {
    const port = server.port;
    await server.stop();
    await expect(fetch(`${server.url}/api/v1/pods`)).rejects.toThrow();
    await server.start();
    expect(server.port).toBe(port);
    const body = (await (await fetch(`${server.url}/api/v1/pods`)).json()) as { items: unknown[] };
    expect(body.items).toHaveLength(2);
  });
});

interface RawEvent {
  readonly type: string;
  readonly object: {
    /** ERROR events carry a Status. */
    readonly kind?: string;
    readonly code?: number;
    readonly metadata: { readonly name?: string; readonly resourceVersion?: string; readonly annotations?: Record<string, string> };
    readonly status?: { readonly phase?: string };
  };
}

/** Reads a watch stream until it ends (or `count` events arrived), parsed. */
async function rawWatch(srv: FakeApiServer, path: string, count: number, during?: () => void): Promise<RawEvent[]> {
  const res = await fetch(`${srv.url}${path}`);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const events: RawEvent[] = [];
  let buffered = '';
  during?.();
  while (events.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += Buffer.from(value).toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      events.push(JSON.parse(buffered.slice(0, nl)) as RawEvent);
      buffered = buffered.slice(nl + 1);
    }
  }
  await reader.cancel().catch(() => {});
  return events;
}

const podIn = (name: string, phase: string, hostNetwork = false) => ({
  kind: 'Pod',
  metadata: { name, namespace: 'jobs' },
  spec: { nodeName: 'n1', hostNetwork },
  status: { phase },
});
const PEERS = 'fieldSelector=status.phase!=Succeeded,status.phase!=Failed,spec.hostNetwork=false';

describe('FakeApiServer field selectors and WatchList', () => {
  let srv: FakeApiServer;
  afterEach(() => srv.stop());

  it('lists only the pods a field selector matches', async () => {
    srv = new FakeApiServer();
    await srv.start();
    for (const p of [podIn('run', 'Running'), podIn('done', 'Succeeded'), podIn('failed', 'Failed'), podIn('host', 'Running', true)])
      srv.create(p);
    const body = (await (await fetch(`${srv.url}/api/v1/pods?${PEERS}`)).json()) as { items: { metadata: { name: string } }[] };
    expect(body.items.map((i) => i.metadata.name)).toEqual(['run']);
  });

  it('refuses a field label it does not know with 400, as a server before 1.28 refuses spec.hostNetwork', async () => {
    srv = new FakeApiServer({ podFieldLabels: ['metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.phase'] });
    await srv.start();
    const res = await fetch(`${srv.url}/api/v1/pods?${PEERS}`);
    expect(res.status).toBe(400);
    const status = (await res.json()) as { reason: string; message: string };
    expect(status.reason).toBe('BadRequest');
    expect(status.message).toBe(
      'Unable to find "/v1, Resource=pods" that match label selector "", field selector ' +
        '"status.phase!=Succeeded,status.phase!=Failed,spec.hostNetwork=false": field label not supported: spec.hostNetwork',
    );
    expect((await fetch(`${srv.url}/api/v1/pods?fieldSelector=status.phase!=Succeeded`)).status).toBe(200);
  });

  it('sends a pod that stops matching as DELETED (its last matching state, at the new resourceVersion), and not one that matched neither before nor after', async () => {
    srv = new FakeApiServer();
    await srv.start();
    srv.create(podIn('job', 'Running'));
    srv.create(podIn('other', 'Pending'));
    const rv = srv.resourceVersion;
    const events = await rawWatch(srv, `/api/v1/pods?watch=true&resourceVersion=${rv}&${PEERS}`, 3, () => {
      srv.update(podIn('job', 'Succeeded'));
      srv.update(podIn('job', 'Succeeded')); // matched neither before nor after: not sent
      srv.update(podIn('other', 'Running'));
      srv.create(podIn('later-done', 'Succeeded')); // never matched: not sent
      srv.delete(podIn('other', 'Running'));
    });
    expect(events.map((e) => [e.type, e.object.metadata.name, e.object.status?.phase, e.object.metadata.resourceVersion])).toEqual([
      ['DELETED', 'job', 'Running', String(Number(rv) + 1)],
      ['MODIFIED', 'other', 'Running', String(Number(rv) + 3)],
      ['DELETED', 'other', 'Running', String(Number(rv) + 5)],
    ]);
  });

  it('sends a pod that starts matching (scheduled onto the selected node) as ADDED', async () => {
    srv = new FakeApiServer();
    await srv.start();
    srv.create({ ...podIn('p', 'Pending'), spec: {} });
    const events = await rawWatch(
      srv,
      `/api/v1/pods?watch=true&resourceVersion=${srv.resourceVersion}&fieldSelector=spec.nodeName=n1`,
      1,
      () => srv.update(podIn('p', 'Pending')),
    );
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED p']);
  });

  it('WatchList: the state as ADDED, a BOOKMARK annotated initial-events-end at its resourceVersion, then live events', async () => {
    srv = new FakeApiServer({ watchList: true });
    await srv.start();
    srv.create(podIn('a', 'Running'));
    srv.create(podIn('done', 'Succeeded'));
    const rv = srv.resourceVersion;
    const query = 'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';
    const events = await rawWatch(srv, `/api/v1/pods?${query}&${PEERS}`, 3, () => setTimeout(() => srv.create(podIn('b', 'Running')), 50));
    expect(events.map((e) => `${e.type} ${e.object.metadata.name ?? e.object.metadata.resourceVersion}`)).toEqual([
      'ADDED a',
      `BOOKMARK ${rv}`,
      'ADDED b',
    ]);
    expect(events[1]!.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
  });

  it('refuses WatchList without the feature gate with 422 Invalid naming sendInitialEvents, as the real server does', async () => {
    srv = new FakeApiServer();
    await srv.start();
    const res = await fetch(
      `${srv.url}/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
    );
    expect(res.status).toBe(422);
    const status = (await res.json()) as { reason: string; message: string; details: { causes: { field: string }[] } };
    expect(status.reason).toBe('Invalid');
    expect(status.message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
    );
    expect(status.details.causes.map((c) => c.field)).toEqual(['sendInitialEvents']);
    // And with the gate, the parameters must still agree.
    srv.watchList = true;
    expect((await fetch(`${srv.url}/api/v1/pods?watch=true&sendInitialEvents=true`)).status).toBe(422);
  });

  it('gzips a list over 128 KiB for a client that accepts it, as the API server does, and never a watch stream', async () => {
    srv = new FakeApiServer({ compressLists: true });
    await srv.start();
    for (let i = 0; i < 600; i++)
      srv.create({ ...podIn(`p${i}`, 'Running'), metadata: { name: `p${i}`, namespace: 'jobs', labels: { n: 'x'.repeat(200) } } });
    const list = await fetch(`${srv.url}/api/v1/pods`, { headers: { 'accept-encoding': 'gzip' } });
    expect(list.headers.get('content-encoding')).toBe('gzip');
    expect(((await list.json()) as { items: unknown[] }).items).toHaveLength(600); // fetch inflates it
    const small = await fetch(`${srv.url}/api/v1/pods?limit=10`, { headers: { 'accept-encoding': 'gzip' } });
    expect(small.headers.get('content-encoding')).toBeNull();
    const plain = await fetch(`${srv.url}/api/v1/pods`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    const watch = await fetch(`${srv.url}/api/v1/pods?watch=true&timeoutSeconds=1`, { headers: { 'accept-encoding': 'gzip' } });
    expect(watch.headers.get('content-encoding')).toBeNull();
    await watch.body?.cancel();
  });
});
