// The nft bridge table that binds pod ports to their addresses (src/antispoof): applied with `nft -f -`
// (one transaction: all of it or none of it), and its drop counters read back from `nft -j`.

import { run } from './exec.js';

export async function applyNftScript(script: string, netns?: string): Promise<void> {
  await run('nft', ['-f', '-'], { input: script, netns });
}

/** Packets counted by each commented rule of `family table`; empty when the table does not exist. */
export async function readNftCounters(family: string, table: string, netns?: string): Promise<Map<string, number>> {
  let stdout: string;
  try {
    ({ stdout } = await run('nft', ['-j', 'list', 'table', family, table], { netns }));
  } catch {
    return new Map();
  }
  return countersFromJson(stdout);
}

/** `nft -j list table …` → comment → packets, for rules that carry both. */
export function countersFromJson(json: string): Map<string, number> {
  const out = new Map<string, number>();
  const doc = JSON.parse(json) as { nftables?: { rule?: { comment?: string; expr?: { counter?: { packets?: number } }[] } }[] };
  for (const item of doc.nftables ?? []) {
    const rule = item.rule;
    const counter = rule?.expr?.find((e) => e.counter !== undefined)?.counter;
    if (rule?.comment !== undefined && counter?.packets !== undefined)
      out.set(rule.comment, (out.get(rule.comment) ?? 0) + counter.packets);
  }
  return out;
}

export interface NftCount {
  readonly packets: number;
  readonly bytes: number;
}

/** Packets and bytes of each commented rule of `family table`; empty when the table does not exist. */
export async function readNftCounts(family: string, table: string, netns?: string): Promise<Map<string, NftCount>> {
  const json = await listNftTableJson(family, table, netns);
  return json === undefined ? new Map() : countsFromJson(json);
}

/** `nft -j list table …` → comment → packets and bytes, for rules that carry both a comment and a counter. */
export function countsFromJson(json: string): Map<string, NftCount> {
  const out = new Map<string, NftCount>();
  const doc = JSON.parse(json) as {
    nftables?: { rule?: { comment?: string; expr?: { counter?: { packets?: number; bytes?: number } }[] } }[];
  };
  for (const item of doc.nftables ?? []) {
    const rule = item.rule;
    const counter = rule?.expr?.find((e) => e.counter !== undefined)?.counter;
    if (rule?.comment === undefined || counter?.packets === undefined) continue;
    const was = out.get(rule.comment) ?? { packets: 0, bytes: 0 };
    out.set(rule.comment, { packets: was.packets + counter.packets, bytes: was.bytes + (counter.bytes ?? 0) });
  }
  return out;
}

/** `nft -j list table family table` as text; undefined when the table does not exist. */
export async function listNftTableJson(family: string, table: string, netns?: string): Promise<string | undefined> {
  try {
    return (await run('nft', ['-j', 'list', 'table', family, table], { netns })).stdout;
  } catch {
    return undefined;
  }
}
