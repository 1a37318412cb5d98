// Strict mode's pass (revoker.ts) judges the established flows of both families: a policy that denies a
// dual-stack pod's ingress revokes its IPv6 flows as well as its IPv4 ones ("an established flow stops
// within one sync of a policy that denies it", for each family the cluster uses).

import { compile } from '../../../src/compile/index.js';
import type { CtEntry, ConntrackTable, MarkUpdate } from '../../../src/dataplane/ctnetlink.js';
import { nullLogger } from '../../../src/log.js';
import type { IpFamily } from '../../../src/model/index.js';
import { Revoker } from '../../../src/revoke/revoker.js';
import { ips, labels, makeNamespace, makePod, makePolicy, sel, selectPods, settings, types } from '../../helpers/builders.js';

const REVOKE_BIT = 0x100000;
const node = settings({ podCidrs: ['10.244.1.0/24', 'fd00:10:244:1::/64'], revokeMark: REVOKE_BIT });
const server = makePod('x', 'server', '10.244.1.10', ips('10.244.1.10', 'fd00:10:244:1::10'), labels({ app: 'server' }));
const client = makePod('x', 'client', '10.244.1.11', ips('10.244.1.11', 'fd00:10:244:1::11'), labels({ app: 'client' }));
const snapshot = { nodes: [], namespaces: [makeNamespace('x')], pods: [server, client], policies: [] };
/** Selects the server for ingress and allows nothing: every flow to it is denied. */
const denyServer = makePolicy('x', 'deny-server', selectPods(sel({ app: 'server' })), types('Ingress'));

const tcpFlow = (family: IpFamily, from: string, to: string): CtEntry => ({
  family,
  orig: { src: from, dst: to, proto: 6, sport: 40000, dport: 80 },
  reply: { src: to, dst: from, proto: 6, sport: 80, dport: 40000 },
  mark: 0,
  zone: 0,
});
const FLOWS = [tcpFlow(4, '10.244.1.11', '10.244.1.10'), tcpFlow(6, 'fd00:10:244:1::11', 'fd00:10:244:1::10')];

function fakeConntrack(): ConntrackTable & { readonly updates: MarkUpdate[] } {
  const updates: MarkUpdate[] = [];
  return {
    updates,
    list: async (family) => FLOWS.filter((f) => f.family === family),
    updateMarks: async (batch) => {
      updates.push(...batch);
      return { updated: batch.length, gone: 0 };
    },
    close: async () => undefined,
  };
}

describe('strict mode pass', () => {
  it('revokes the denied flows of both families', async () => {
    const table = fakeConntrack();
    const revoker = new Revoker({ open: async () => table, logger: nullLogger });
    revoker.request(compile({ ...snapshot, policies: [denyServer] }, node).desired, node);
    await revoker.idle();
    expect(revoker.lastPass.map((r) => [r.family, r.revoked])).toEqual([
      [4, 1],
      [6, 1],
    ]);
    expect(table.updates.map((u) => [u.family, u.orig.dst, u.value & REVOKE_BIT])).toEqual([
      [4, '10.244.1.10', REVOKE_BIT],
      [6, 'fd00:10:244:1::10', REVOKE_BIT],
    ]);
    await revoker.stop();
  });

  it('revokes nothing while no policy denies the flows', async () => {
    const table = fakeConntrack();
    const revoker = new Revoker({ open: async () => table, logger: nullLogger });
    revoker.request(compile(snapshot, node).desired, node);
    await revoker.idle();
    expect(table.updates).toEqual([]);
    await revoker.stop();
  });
});
