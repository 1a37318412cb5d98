// Drives test/helpers/flow-peer.py in a pod's network namespace: established TCP, UDP and (emulated)
// SCTP flows whose two ends the test makes speak in any order.

import { fileURLToPath } from 'node:url';
import { startJsonLineProcess, type JsonLineProcess } from '../../src/dataplane/process.js';

const SCRIPT = fileURLToPath(new URL('./flow-peer.py', import.meta.url));

export type FlowProto = 'TCP' | 'UDP' | 'SCTP';

export interface FlowPeer {
  /** TCP and UDP on `host` (default 0.0.0.0; `::` for IPv6 too); SCTP (emulated on raw sockets) on both families whatever `host` says. */
  listen(proto: FlowProto, port: number, host?: string): Promise<void>;
  /** Opens `flow` and exchanges hello/ack, so conntrack holds it as established both ways. */
  connect(proto: FlowProto, ip: string, port: number, flow: string): Promise<void>;
  send(flow: string, text: string): Promise<void>;
  received(flow: string): Promise<string[]>;
  /** Records every UDP datagram to `port` with its source address. */
  sink(port: number): Promise<void>;
  sunk(): Promise<{ readonly src: string; readonly text: string }[]>;
  /** One UDP datagram with a source address the pod may not hold (IP_TRANSPARENT). */
  sendFrom(src: string, ip: string, port: number, text: string): Promise<void>;
  /** Broadcasts gratuitous ARP replies claiming `ip` for this pod's eth0 MAC. */
  garp(ip: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startFlowPeer(netns: string): Promise<FlowPeer> {
  const proc: JsonLineProcess = await startJsonLineProcess({ file: 'python3', args: ['-u', SCRIPT], netns });
  const ask = async (message: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const reply = await proc.request(message, 10_000);
    if (reply['ok'] !== true) throw new Error(`flow peer in ${netns}: ${JSON.stringify(message)} failed: ${String(reply['error'])}`);
    return reply as Record<string, unknown>;
  };
  return {
    listen: async (proto, port, host) => void (await ask({ op: 'listen', proto, port, ...(host !== undefined ? { host } : {}) })),
    connect: async (proto, ip, port, flow) => void (await ask({ op: 'connect', proto, ip, port, flow })),
    send: async (flow, text) => void (await ask({ op: 'send', flow, text })),
    received: async (flow) => (await ask({ op: 'received', flow }))['messages'] as string[],
    sink: async (port) => void (await ask({ op: 'sink', port })),
    sunk: async () => ((await ask({ op: 'sunk' }))['datagrams'] as [string, string][]).map(([src, text]) => ({ src, text })),
    sendFrom: async (src, ip, port, text) => void (await ask({ op: 'sendfrom', src, ip, port, text })),
    garp: async (ip) => void (await ask({ op: 'garp', claim: ip })),
    stop: async () => void (await proc.stop()),
  };
}
