// Client side of sandbox-agent.py: one long-lived agent per pod (and per node) network
// namespace that serves TCP/UDP/SCTP on the pod's ports and runs probes from inside that namespace.

import { fileURLToPath } from 'node:url';
import type { Protocol } from '../src/model/index.js';
import { startJsonLineProcess } from '../src/dataplane/process.js';

/** The agent script, beside this module. */
export const AGENT_SCRIPT = fileURLToPath(new URL('./sandbox-agent.py', import.meta.url));

export const DEFAULT_PORTS: readonly number[] = [80, 81];

export interface ProbeRequest {
  readonly protocol: Protocol;
  readonly ip: string;
  readonly port: number;
  readonly timeoutMs: number;
}

export interface ProbeResult {
  readonly ok: boolean;
  /** Why a probe failed: `timeout`, `ConnectionRefusedError: …`, or a protocol failure of the agent itself. */
  readonly error?: string;
}

export interface Agent {
  readonly pid: number;
  probe(req: ProbeRequest): Promise<ProbeResult>;
  stop(): Promise<void>;
}

/** Slack on top of the probe's own timeout before we give up on the agent answering at all. */
const REPLY_SLACK_MS = 3000;

export interface AgentOptions {
  readonly netns: string;
  readonly ports: readonly number[];
  /** Shown in diagnostics (`x/a`, `node:n1`). */
  readonly name: string;
  /** Interface to send a gratuitous ARP on at start (pods: `eth0`), so neighbours forget a reused IP's old MAC. */
  readonly announce?: string;
  readonly onStderr?: (line: string) => void;
}

export async function startAgent(opts: AgentOptions): Promise<Agent> {
  const proc = await startJsonLineProcess({
    file: 'python3',
    args: [
      '-u',
      AGENT_SCRIPT,
      '--ports',
      opts.ports.join(','),
      '--name',
      opts.name,
      ...(opts.announce ? ['--announce', opts.announce] : []),
    ],
    netns: opts.netns,
    ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
  });
  return {
    pid: proc.pid,
    async probe(req) {
      try {
        const reply = await proc.request(
          { op: 'probe', proto: req.protocol, ip: req.ip, port: req.port, timeoutMs: req.timeoutMs },
          req.timeoutMs + REPLY_SLACK_MS,
        );
        if (reply['ok'] === true) return { ok: true };
        return { ok: false, error: typeof reply['error'] === 'string' ? reply['error'] : 'probe failed' };
      } catch (err) {
        return { ok: false, error: `agent ${opts.name}: ${(err as Error).message}` };
      }
    },
    async stop() {
      await proc.stop();
    },
  };
}
