// The sandbox's node agents answer UDP and SCTP from the address that was probed, on both families, with
// no policy installed: a pod probing its own node's underlay address (or the other node's cni0 gateway)
// must get the reply from that address. A wildcard socket's reply would leave from the source its route
// picks — cni0's gateway for a local pod — and the client, which only accepts an answer from the address
// it asked (a connected UDP socket; an SCTP INIT-ACK matched on its source), would see a timeout. Every
// node-peer conformance poke to a pod's own node depends on this.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns sandbox-node-replies

import { jest } from '@jest/globals';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, type Sandbox, type SandboxFamily } from '../../sandbox/topology.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(60_000);

const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;

describeKernel('sandbox node agents answer from the probed address', () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await createSandbox({
      nodes: [
        { name: 'n1', podCidr: '10.244.1.0/24' },
        { name: 'n2', podCidr: '10.244.2.0/24' },
      ],
      ipv6: {},
    });
    await sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' });
    await sandbox.addPod({ namespace: 'x', name: 'b', node: 'n2' });
  });
  afterAll(async () => {
    await sandbox?.destroy();
  });

  /** Every address of every node: underlay and cni0 gateway. */
  const targets = (family: SandboxFamily) =>
    sandbox.nodes().flatMap((n) => {
      const v =
        family === 4 ? { underlay: n.underlayIp, gateway: n.gatewayIp } : { underlay: n.ipv6!.underlayIp, gateway: n.ipv6!.gatewayIp };
      return [
        { label: `node:${n.name} underlay ${v.underlay}`, ip: v.underlay },
        { label: `node:${n.name} cni0 ${v.gateway}`, ip: v.gateway },
      ];
    });

  it.each([4, 6] as const)(
    'IPv%s: every pod reaches every address of both nodes on TCP, UDP and SCTP, own node included',
    async (family) => {
      if (family === 6) await Promise.all(sandbox.pods().map((p) => run('ip', ['-6', 'neigh', 'flush', 'all'], { netns: p.netns })));
      const cells = sandbox
        .pods()
        .flatMap((p) => targets(family).flatMap((t) => PROTOCOLS.map((protocol) => ({ from: p.key, ...t, protocol }))));
      // At least one cell per protocol is a pod probing its own node's underlay address (the case that broke).
      expect(cells.filter((c) => c.from === 'x/a' && c.label.startsWith('node:n1 underlay'))).toHaveLength(3);
      const results = await Promise.all(
        cells.map(async (c) => {
          // Retried once: a cold neighbour cache may cost the first datagram.
          let r = await sandbox.probe(c.from, { protocol: c.protocol, ip: c.ip, port: 80, timeoutMs: 1000 });
          if (!r.ok) r = await sandbox.probe(c.from, { protocol: c.protocol, ip: c.ip, port: 80, timeoutMs: 2000 });
          return `${c.from} → ${c.label} ${c.protocol}/80: ${r.ok ? 'ok' : r.error}`;
        }),
      );
      expect(results).toEqual(cells.map((c) => `${c.from} → ${c.label} ${c.protocol}/80: ok`));
    },
  );
});
