// The answer as text: a head line with the verdict, then one line per side that judged the connection.
//
//   shop/web (node-a) -> shop/db:5432 (node-b)   DROPPED at node-b
//     node-a egress   allowed   NetworkPolicy shop/web-egress rule egress:0 (to app=db)
//     node-b ingress  DROPPED   shop/db is isolated for ingress by shop/db-ingress; no rule admits …
//                               (closest rule: ingress:0 admits app=api on tcp/5432; differs in …)

import { WIDTH, wrap } from '../trace/index.js';
import type { Answer, Side } from './answer.js';
import type { Endpoint } from './endpoints.js';

const VERDICT_COLUMN = 11;

export function formatAnswer(a: Answer): string {
  const { src, dst, proto, port } = a.connection;
  const verdict = a.verdict === 'allowed' ? 'ALLOWED' : `DROPPED at ${a.droppedAt}`;
  const head = `${proto} ${end(src)} -> ${end(dst, port)}   ${verdict}`;
  const nodeWidth = Math.max(...a.sides.map((s) => s.node.length), 4);
  const lines = head.length <= WIDTH ? [head] : wrap(head, '', '    ');
  for (const side of a.sides) lines.push(...sideLines(side, nodeWidth));
  return `${lines.join('\n')}\n`;
}

function end(e: Endpoint, port?: number): string {
  const at = port !== undefined ? `:${port}` : '';
  switch (e.kind) {
    case 'pod':
      return `${e.pod}${at} (${e.node})`;
    case 'node':
      return `${e.ip}${at} (node ${e.node})`;
    case 'unknown-pod':
      return `${e.ip}${at} (no pod; ${e.node}'s pod CIDR)`;
    case 'external':
      return `${e.ip}${at} (outside the cluster)`;
  }
}

function sideLines(s: Side, nodeWidth: number): string[] {
  const lead = `  ${s.node.padEnd(nodeWidth)} ${s.direction.padEnd(8)} ${(s.verdict === 'dropped' ? 'DROPPED' : s.verdict).padEnd(VERDICT_COLUMN)}  `;
  const hang = ' '.repeat(lead.length);
  const lines = wrap(s.because, lead, hang);
  if (s.audit !== undefined) lines.push(...wrap(`${s.verdict === 'dropped' ? 'dropped' : 'allowed'} now; ${s.audit}`, hang));
  if (s.afterLookup !== undefined) lines.push(...wrap(s.afterLookup, hang));
  for (const c of s.closest ?? [])
    lines.push(...wrap(`(closest rule: ${c.policy} ${c.rule} admits ${c.admits}; it differs in ${c.differs})`, hang));
  return lines;
}
