// The nft bridge table that binds pod ports to their addresses (src/antispoof): applied with `nft -f -`
// (one transaction: all of it or none of it), and its drop counters read back from `nft -j` (read by
// render/nft-json.ts).

import { nftCountsByComment, parseNftListing, type NftCount } from '../render/index.js';
import { run } from './exec.js';

export type { NftCount } from '../render/index.js';

export async function applyNftScript(script: string, netns?: string): Promise<void> {
  await run('nft', ['-f', '-'], { input: script, netns });
}

/** Packets counted by each commented rule of `family table`; empty when the table does not exist. */
export async function readNftCounters(family: string, table: string, netns?: string): Promise<Map<string, number>> {
  const counts = await readNftCounts(family, table, netns);
  return new Map([...counts].map(([comment, count]) => [comment, count.packets]));
}

/** Packets and bytes of each commented rule of `family table`; empty when the table does not exist. */
export async function readNftCounts(family: string, table: string, netns?: string): Promise<Map<string, NftCount>> {
  const json = await listNftTableJson(family, table, netns);
  return json === undefined ? new Map() : nftCountsByComment(parseNftListing(json));
}

/** `nft -j list table family table` as text; undefined when the table does not exist. */
export async function listNftTableJson(family: string, table: string, netns?: string): Promise<string | undefined> {
  try {
    return (await run('nft', ['-j', 'list', 'table', family, table], { netns })).stdout;
  } catch {
    return undefined;
  }
}
