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

/**
 * Agents starting at once in this process. A start is mostly CPU (python's imports: ~0.5 s at load average 14 on
 * two cores), and each has its own 10 s ready deadline: a sandbox adding its nine pods together, beside another
 * test file doing the same, made 18 starts share the CPUs and some missed the deadline. Queued starts wait their
 * turn before their deadline begins.
 */
const STARTS_AT_ONCE = 4;
let starting = 0;
const waitingToStart: (() => void)[] = [];

async function startSlot<T>(start: () => Promise<T>): Promise<T> {
  // A finished start hands its slot straight to the next one waiting.
  if (starting >= STARTS_AT_ONCE) await new Promise<void>((resolve) => waitingToStart.push(resolve));
  else starting++;
  try {
    return await start();
  } finally {
    const next = waitingToStart.shift();
    if (next) next();
    else starting--;
  }
}

export async function startAgent(opts: AgentOptions): Promise<Agent> {
  const proc = await startSlot(() =>
    startJsonLineProcess({
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
    }),
  );
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
