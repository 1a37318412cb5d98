// Drives test/helpers/v6-peer.py in a pod's network namespace: IPv6 datagrams with held or forged
// sources, plain datagrams to broadcast and multicast addresses, and the Neighbour/Router
// Advertisements a pod could forge on the pod bridge.

import { fileURLToPath } from 'node:url';
import { startJsonLineProcess, type JsonLineProcess } from '../../src/dataplane/process.js';

const SCRIPT = fileURLToPath(new URL('./v6-peer.py', import.meta.url));

export interface V6Peer {
  /** Records every UDP datagram to [::]:`port` with its source address. */
  sink(port: number): Promise<void>;
  sunk(): Promise<{ readonly src: string; readonly text: string }[]>;
  /** One UDP datagram from `src`, an address the pod may not hold (IPV6_TRANSPARENT). */
  sendFrom(src: string, ip: string, port: number, text: string): Promise<void>;
  /** One plain UDP datagram (either family; broadcast and multicast addresses too). */
  send(ip: string, port: number, text: string): Promise<void>;
  /** One IPv4 UDP datagram to `ip` in a frame for `mac` with an 802.1Q priority tag (VLAN id 0). */
  sendTagged(mac: string, src: string, ip: string, port: number, text: string): Promise<void>;
  /** Unsolicited Neighbour Advertisements (Override set) to all nodes: "`target` is at my MAC". */
  advertise(target: string): Promise<void>;
  /** Router Advertisements to all nodes: "I am a default router". */
  routerAdvert(): Promise<void>;
  stop(): Promise<void>;
}

export async function startV6Peer(netns: string): Promise<V6Peer> {
  const proc: JsonLineProcess = await startJsonLineProcess({ file: 'python3', args: ['-u', SCRIPT], netns });
  const ask = async (message: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const reply = await proc.request(message, 10_000);
    if (reply['ok'] !== true) throw new Error(`v6 peer in ${netns}: ${JSON.stringify(message)} failed: ${String(reply['error'])}`);
    return reply as Record<string, unknown>;
  };
  return {
    sink: async (port) => void (await ask({ op: 'sink', port })),
    sunk: async () => ((await ask({ op: 'sunk' }))['datagrams'] as [string, string][]).map(([src, text]) => ({ src, text })),
    sendFrom: async (src, ip, port, text) => void (await ask({ op: 'sendfrom', src, ip, port, text })),
    send: async (ip, port, text) => void (await ask({ op: 'send', ip, port, text })),
    sendTagged: async (mac, src, ip, port, text) => void (await ask({ op: 'tagged', mac, src, ip, port, text })),
    advertise: async (target) => void (await ask({ op: 'na', target })),
    routerAdvert: async () => void (await ask({ op: 'ra' })),
    stop: async () => void (await proc.stop()),
  };
}
