// The DNS messages scripts/capture-dns-fixtures.py recorded (dnsmasq answering dig across a veth, captured
// with AF_PACKET), by case name.

import { readFileSync } from 'node:fs';

interface CapturedCase {
  readonly case: string;
  readonly messages: readonly { readonly transport: 'udp' | 'tcp'; readonly direction: 'query' | 'answer'; readonly hex: string }[];
}

const file = JSON.parse(readFileSync(new URL('./fixtures/captured.json', import.meta.url), 'utf8')) as { cases: CapturedCase[] };

/** The query and the answer of one captured case, as the transport carried them (TCP with its length prefix). */
export function captured(name: string): { query: Buffer; answer: Buffer; transport: 'udp' | 'tcp' } {
  const c = file.cases.find((x) => x.case === name);
  if (!c) throw new Error(`no captured case ${name}`);
  const query = c.messages.find((m) => m.direction === 'query');
  const answer = c.messages.find((m) => m.direction === 'answer');
  if (!query || !answer) throw new Error(`captured case ${name} lacks a query or an answer`);
  return { query: Buffer.from(query.hex, 'hex'), answer: Buffer.from(answer.hex, 'hex'), transport: answer.transport };
}
