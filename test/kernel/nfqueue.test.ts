// NFQUEUE with real packets, bound by the DNS agent's own socket (src/dataplane/dns-socket.ts, its worker inside
// the namespace): a client and a server namespace joined by a veth; in the client namespace answers from port 53
// that are the reply direction of an established flow go to the queue (`-j NFQUEUE --queue-bypass`). An answer is
// held (the client does not have it) until it is released, then delivered; with no socket bound it passes;
// closing the socket releases what it held (the queue drained to length 0 first, then unbound); a full queue
// passes what it cannot hold; an unsolicited datagram from port 53 is never queued.

import { jest } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { openDnsSocket, type DnsSocket } from '../../src/dataplane/dns-socket.js';
import { parseIpHeader } from '../../src/dataplane/nflog-wire.js';
import { startJsonLineProcess, type JsonLineProcess, type JsonObject } from '../../src/dataplane/process.js';
import { waitUntil } from '../helpers/daemon-harness.js';
import { createNetns, describeKernel, type Netns } from '../helpers/netns.js';

jest.setTimeout(60_000);

const QUEUE = 7;
const GROUP = 8;
const CLIENT_IP = '10.53.0.1';
const SERVER_IP = '10.53.0.2';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface HeldPacket {
  readonly id: number;
  readonly src: string | undefined;
  readonly srcPort: number | undefined;
  readonly text: string;
}

describeKernel('NFQUEUE holds DNS answers until they are released, and fails open', () => {
  let client: Netns;
  let server: Netns;
  let clientPeer: JsonLineProcess;
  let serverPeer: JsonLineProcess;
  const held: HeldPacket[] = [];

  const startPeer = (ns: Netns): Promise<JsonLineProcess> =>
    startJsonLineProcess({ file: 'python3', args: ['-u', `${ROOT}/test/helpers/udp-exchange.py`], netns: ns.name });
  const bind = (maxLen?: number): Promise<DnsSocket> =>
    openDnsSocket({
      queue: QUEUE,
      nflogGroup: GROUP,
      netns: client.name,
      ...(maxLen === undefined ? {} : { maxLen }),
      onAnswer: (id, packet) => {
        const ip = parseIpHeader(packet);
        // The UDP payload of an IPv4 packet without options: what the test's peers send is text.
        const text = ip?.family === 4 && ip.protocol === 17 ? packet.subarray((packet[0]! & 0x0f) * 4 + 8).toString() : '';
        held.push({ id, src: ip?.src, srcPort: ip?.srcPort, text });
      },
      onQuery: () => undefined,
      onError: () => undefined,
    });
  const received = async (): Promise<string[]> => (await clientPeer.request({ op: 'received' }, 5000))['texts'] as string[];
  const ask = (text: string): Promise<JsonObject> => clientPeer.request({ op: 'ask', ip: SERVER_IP, port: 53, text }, 5000);

  beforeAll(async () => {
    client = await createNetns('nfq');
    server = await createNetns('nfq');
    const veth = `vnfq${Math.random().toString(16).slice(2, 8)}`;
    await client.exec('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', `${veth}s`, 'netns', server.name]);
    await client.exec('ip', ['addr', 'add', `${CLIENT_IP}/24`, 'dev', veth]);
    await client.exec('ip', ['link', 'set', veth, 'up']);
    await server.exec('ip', ['addr', 'add', `${SERVER_IP}/24`, 'dev', `${veth}s`]);
    await server.exec('ip', ['link', 'set', `${veth}s`, 'up']);
    // The answers of the client's own lookups only: from port 53, the reply direction of a flow it opened.
    await client.exec('iptables', [
      '-w', '-A', 'INPUT', '-p', 'udp', '--sport', '53', '-m', 'conntrack', '--ctstate', 'ESTABLISHED', '--ctdir', 'REPLY',
      '-j', 'NFQUEUE', '--queue-num', String(QUEUE), '--queue-bypass',
    ]); // prettier-ignore
    clientPeer = await startPeer(client);
    serverPeer = await startPeer(server);
    await serverPeer.request({ op: 'serve', port: 53 }, 5000);
  });

  afterAll(async () => {
    await clientPeer?.stop();
    await serverPeer?.stop();
    await client?.destroy();
    await server?.destroy();
  });

  it('with no socket bound, --queue-bypass lets the answer pass', async () => {
    await ask('unbound');
    await waitUntil('the answer without a queue listener', async () => (await received()).includes('re:unbound'), 10_000);
  });

  it('an answer is held until it is released, then delivered; closing the socket releases held answers; then answers pass', async () => {
    const socket = await bind();
    try {
      await ask('one');
      await waitUntil('the answer in the queue', () => held.some((p) => p.text === 're:one'), 10_000);
      const one = held.find((p) => p.text === 're:one')!;
      // From the server's port 53 (the rule admitted it as the reply of the client's flow).
      expect([one.src, one.srcPort]).toEqual([SERVER_IP, 53]);
      // Held: the kernel has it and has not delivered it. A second lookup's answer overtakes nothing.
      await ask('two');
      await waitUntil('the second answer in the queue', () => held.some((p) => p.text === 're:two'), 10_000);
      expect((await received()).filter((t) => t === 're:one' || t === 're:two')).toEqual([]);

      socket.release(one.id);
      await waitUntil('the released answer', async () => (await received()).includes('re:one'), 10_000);
      expect(await received()).not.toContain('re:two');

      // Closing the socket releases what it still holds ...
      await socket.close();
      await waitUntil('the answer held at close', async () => (await received()).includes('re:two'), 10_000);
      // ... and with the queue unbound, answers pass again.
      await ask('after-close');
      await waitUntil('an answer after close', async () => (await received()).includes('re:after-close'), 10_000);
      expect(held.map((p) => p.text)).not.toContain('re:after-close');
    } finally {
      await socket.close();
    }
  });

  it('a full queue fails open: the answer past its length passes without a verdict', async () => {
    const socket = await bind(1);
    try {
      await ask('fills');
      await waitUntil('the first answer in the queue', () => held.some((p) => p.text === 're:fills'), 10_000);
      await ask('overflows');
      await waitUntil('the answer past the full queue', async () => (await received()).includes('re:overflows'), 10_000);
      expect(await received()).not.toContain('re:fills');
      expect(held.map((p) => p.text)).not.toContain('re:overflows');
    } finally {
      await socket.close();
    }
  });

  it('a datagram from port 53 that answers no query of the client is not queued', async () => {
    const socket = await bind();
    try {
      const port = 40_000 + Math.floor(Math.random() * 20_000);
      // Unsolicited: from the server's port 53 to a client port with no flow. conntrack calls it NEW, so the
      // rule does not queue it; a listener proves it arrived through the namespace's INPUT chain.
      await clientPeer.request({ op: 'serve', port }, 5000);
      await serverPeer.request({ op: 'send-from', from: 53, ip: CLIENT_IP, port, text: 'forged' }, 5000);
      await waitUntil('the unsolicited datagram at its listener', async () => {
        const r = await clientPeer.request({ op: 'served' }, 5000);
        return (r['texts'] as string[]).includes('forged');
      });
      expect(held.map((p) => p.text)).not.toContain('forged');
    } finally {
      await socket.close();
    }
  });
});
