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
  const res = await fetch(`${server.url}${path}`);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const events: string[] = [];
  let buffered = '';
  during?.();
  while (events.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += Buffer.from(value).toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const e = JSON.parse(buffered.slice(0, nl)) as {
        type: string;
        object: { kind?: string; code?: number; metadata: { name?: string; resourceVersion?: string } };
      };
      buffered = buffered.slice(nl + 1);
      events.push(
        e.type === 'ERROR'
          ? `ERROR ${e.object.kind} ${e.object.code}`
          : `${e.type} ${e.object.metadata.name ?? e.object.metadata.resourceVersion}`,
      );
    }
  }
  await reader.cancel().catch(() => {});
  return events;
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
