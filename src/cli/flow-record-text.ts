// One flow-log record as the terminal shows it (`netfence drops`, on one node or across the cluster).

import { endText, type FlowRecord } from '../observe/flow-log.js';
import type { FlowEnd } from '../observe/flows.js';
import { wrap } from '../trace/wrap.js';
import { terminalSafe } from '../commands/terminal-text.js';
import { icmpText } from '../observe/icmp-names.js';

const safeEnd = (e: FlowEnd): FlowEnd => ({
  ip: terminalSafe(e.ip),
  ...(e.pod !== undefined ? { pod: terminalSafe(e.pod) } : {}),
  ...(e.where !== undefined ? { where: terminalSafe(e.where) } : {}),
});

/** One record as text; every string in it came from the daemon's answer and is shown terminal-safe. */
export function formatRecord(r: FlowRecord): string {
  const time = new Date(r.time).toISOString().slice(11, 19);
  // `tcp/80`, `icmp echo-request`, `icmpv6 type 200`: what an operator needs to tell one drop from another.
  const port = r.port !== undefined ? `/${r.port}` : r.icmp !== undefined ? ` ${terminalSafe(icmpText(r.protocol, r.icmp))}` : '';
  const count = r.count > 1 ? ` (×${r.count})` : '';
  const head = `${time} ${terminalSafe(r.protocol)}${port} ${endText(safeEnd(r.src))} -> ${endText(safeEnd(r.dst))}, ${terminalSafe(r.direction)}${count}`;
  return `${[...wrap(head, '', '         '), ...wrap(terminalSafe(r.because), '         ', '         ')].join('\n')}\n`;
}
