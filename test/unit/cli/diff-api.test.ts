// `netfence diff --kubeconfig F --saved DUMP`: the desired state comes from the API (the fake list/watch
// server), the observed one from a saved dump, so no root and no kernel are needed.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { FakeApiServer, writeKubeconfig } from '../../fakes/fake-apiserver.js';

const EMPTY_DUMP = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n';

describe('diff against the API', () => {
  let server: FakeApiServer;
  let dir: string;
  beforeAll(async () => {
    server = new FakeApiServer();
    await server.start();
    dir = mkdtempSync(join(tmpdir(), 'nft-diffapi-'));
    server.create({ kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.1.0/24' } });
    server.create({ kind: 'Namespace', metadata: { name: 'web' } });
    server.create({
      kind: 'Pod',
      metadata: { name: 'a', namespace: 'web', labels: { app: 'a' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: '10.244.1.5' },
    });
    server.create({ kind: 'NetworkPolicy', metadata: { name: 'deny', namespace: 'web' }, spec: { podSelector: {} } });
  });
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the cluster once and shows the chains it would write (exit 1)', async () => {
    const dump = join(dir, 'dump.txt');
    writeFileSync(dump, EMPTY_DUMP);
    const out: string[] = [];
    const code = await main(['diff', '--node-name', 'n1', '--kubeconfig', writeKubeconfig(server, dir), '--saved', dump], {
      out: (t) => void out.push(t),
      err: () => {},
    });
    const text = out.join('');
    expect(code).toBe(1);
    expect(text).toContain('### IPv4 policy web/deny');
    expect(text).toContain('### IPv4 pod web/a');
    expect(text).toMatch(/^differs: /m);
  }, 20_000);
});
