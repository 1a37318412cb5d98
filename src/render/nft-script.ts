// nft tables as typed data and the `nft -f` script that replaces one whole: the one writer of nft text. The
// script's leading `table …` + `delete table …` make the table exist and then drop it, so a script that fails
// leaves the previous table in place (nft applies a file atomically or not at all).

import { parseIp } from '../model/index.js';

/** What a match reads. */
export type NftField =
  | 'ether-type'
  | 'arp-sender-ip'
  | 'ip-saddr'
  | 'ip-daddr'
  | 'ip6-saddr'
  | 'ip6-daddr'
  | 'icmpv6-type'
  | 'ip6-hoplimit'
  | 'iifname'
  | 'oifname'
  | 'iifkind'
  | 'oifkind'
  /** An ICMPv6 neighbour message's target address (bytes 8-23 of the ICMPv6 message), compared as IPv6 addresses. */
  | 'nd-target'
  /** The first 10 bits of that target: `0xfe80` is link-local. */
  | 'nd-target-prefix';

type NftValue = string | number;

export interface NftMatch {
  readonly field: NftField;
  /** `!=` instead of equality. */
  readonly negate?: true;
  /** One value, or a set (written in braces even when it holds one). */
  readonly value: NftValue | { readonly set: readonly NftValue[] };
}

export type NftVerdict = 'accept' | 'drop' | 'return' | { readonly jump: string };

export interface NftRule {
  readonly match: readonly NftMatch[];
  /** A counter starting at these counts (carried over from the table being replaced); none when undefined. */
  readonly counter?: { readonly packets: number; readonly bytes: number };
  readonly verdict: NftVerdict;
  readonly comment?: string;
}

export interface NftChain {
  readonly name: string;
  /** A base chain's hook (`type filter hook <hook> priority <priority>; policy accept;`). */
  readonly hook?: { readonly hook: 'prerouting' | 'forward'; readonly priority: number | 'filter' };
  readonly rules: readonly NftRule[];
}

export interface NftTable {
  readonly family: 'bridge';
  readonly name: string;
  readonly chains: readonly NftChain[];
}

const FIELDS: { readonly [F in NftField]: { readonly text: string; readonly value: (v: NftValue) => string } } = {
  'ether-type': { text: 'ether type', value: String },
  'arp-sender-ip': { text: 'arp saddr ip', value: String },
  'ip-saddr': { text: 'ip saddr', value: String },
  'ip-daddr': { text: 'ip daddr', value: String },
  'ip6-saddr': { text: 'ip6 saddr', value: String },
  'ip6-daddr': { text: 'ip6 daddr', value: String },
  'icmpv6-type': { text: 'icmpv6 type', value: String },
  'ip6-hoplimit': { text: 'ip6 hoplimit', value: String },
  iifname: { text: 'iifname', value: (v) => `"${v}"` },
  oifname: { text: 'oifname', value: (v) => `"${v}"` },
  iifkind: { text: 'meta iifkind', value: (v) => `"${v}"` },
  oifkind: { text: 'meta oifkind', value: (v) => `"${v}"` },
  // A raw payload match: nft 1.0.6 names no ND target field. Compared as the 128-bit integer.
  'nd-target': { text: '@th,64,128', value: (v) => `0x${(parseIp(String(v))?.value ?? 0n).toString(16).padStart(32, '0')}` },
  'nd-target-prefix': { text: '@th,64,16 & 0xffc0', value: (v) => `0x${Number(v).toString(16)}` },
};

function matchText(m: NftMatch): string {
  const field = FIELDS[m.field];
  const value = typeof m.value === 'object' ? `{ ${m.value.set.map(field.value).join(', ')} }` : field.value(m.value);
  return `${field.text} ${m.negate ? '!= ' : ''}${value}`;
}

function ruleText(rule: NftRule): string {
  const c = rule.counter;
  return [
    ...rule.match.map(matchText),
    ...(c ? [c.packets > 0 ? `counter packets ${c.packets} bytes ${c.bytes}` : 'counter'] : []),
    typeof rule.verdict === 'object' ? `jump ${rule.verdict.jump}` : rule.verdict,
    ...(rule.comment !== undefined ? [`comment "${rule.comment}"`] : []),
  ].join(' ');
}

const chainLines = (chain: NftChain): string[] => [
  `  chain ${chain.name} {`,
  ...(chain.hook ? [`    type filter hook ${chain.hook.hook} priority ${chain.hook.priority}; policy accept;`] : []),
  ...chain.rules.map((r) => `    ${ruleText(r)}`),
  '  }',
];

/** The script that replaces `table` whole, in one transaction. */
export function renderNftTable(table: NftTable): string {
  const head = `table ${table.family} ${table.name}`;
  const lines = [head, `delete table ${table.family} ${table.name}`, `${head} {`, ...table.chains.flatMap(chainLines), '}'];
  return `${lines.join('\n')}\n`;
}

/** The script that removes a table, tolerant of one that is not there. */
export const renderNftTableDelete = (family: NftTable['family'], name: string): string =>
  `table ${family} ${name}\ndelete table ${family} ${name}\n`;
