// What iptables-legacy-save leaves out, put back from the legacy listing (`iptables-legacy -L -v -n -x`).
//
// libxtables saves an interface match only when its mask has a first byte, so an interface given as the
// bare wildcard `+` is never printed, negated or not. `-i +` matches every packet and is harmless, but
// `! -i +` (or `! -o +`) matches none: a rule of ours edited so, comment kept, is switched off while the
// save prints it byte for byte as we wrote it, and no comparison of saves can see it. The listing prints
// the interface columns from the same kernel rule, with the inversion flag: `!+`. iptables-nft has no
// such gap (it saves `! -i +` as written), so only the legacy backend reads the listing.
//
// The two reads are two processes: someone writing between them would shift the rows. Each chain must have
// as many rows as saved rules, and each rule of ours must be the row carrying its comment, else
// ListingMismatchError (the caller reads both again).

import { HASH_PREFIX } from './iptables-render.js';
import { tokenize } from './tokenize.js';

export class ListingMismatchError extends Error {
  override readonly name = 'ListingMismatchError';
}

interface ListedChain {
  /** Each rule's row as listed, in order. */
  readonly rows: string[];
}

/** `iptables -L -v -n -x` output → chains by name, each with its rule rows (headers left out). */
function parseListing(listing: string): Map<string, ListedChain> {
  const chains = new Map<string, ListedChain>();
  let current: ListedChain | undefined;
  let header = false;
  for (const line of listing.split('\n')) {
    const chain = /^Chain (\S+) \(/.exec(line);
    if (chain) {
      chains.set(chain[1]!, (current = { rows: [] }));
      header = true;
      continue;
    }
    if (line.trim() === '') continue;
    if (header) {
      // The column titles (`pkts bytes target prot opt in out source destination`) follow each chain line.
      header = false;
      continue;
    }
    if (!current) throw new ListingMismatchError(`listing line before any chain: "${line.slice(0, 60)}"`);
    current.rows.push(line);
  }
  return chains;
}

// pkts bytes target prot opt in out source destination [matches]; the target column is blank for a rule
// without one, and the protocol carries `!` (or a space) in front.
const ROW = /^\s*\d+\s+\d+\s\S*\s+[! ]\S+\s+\S\S\s+(\S+)\s+(\S+)\s/;

/** The interface columns of a listed row: `*` for any, `eth0`, `!eth0`, `+`, `!+`. */
function interfacesOf(row: string): { readonly in: string; readonly out: string } | undefined {
  const m = ROW.exec(row);
  return m ? { in: m[1]!, out: m[2]! } : undefined;
}

/** What a saved rule says of one interface, in the listing's spelling (`*` when it says nothing). */
function statedInterface(args: readonly string[], options: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (!options.includes(args[i]!)) continue;
    return `${args[i - 1] === '!' ? '!' : ''}${args[i + 1] ?? ''}`;
  }
  return '*';
}

const COMMENT = `--comment "${HASH_PREFIX}`;

/**
 * `save` (one table's iptables-legacy-save text, with or without counters) with every interface match the
 * listing shows and the save left out written into the rule of ours that has it (`! -i +`). Only rules
 * carrying our comment are looked at: foreign rules are never rewritten, so what they hide does not matter.
 */
export function revealHiddenInterfaces(save: string, listing: string): string {
  const listed = parseListing(listing);
  const seen = new Map<string, number>();
  const lines = save.split('\n');
  let changed = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const rule = /^(?:\[\d+:\d+\] )?-A (\S+) /.exec(line);
    if (!rule) continue;
    const chain = rule[1]!;
    const index = seen.get(chain) ?? 0;
    seen.set(chain, index + 1);
    const at = line.indexOf(COMMENT);
    if (at < 0) continue;
    // The hash identifies the rule and its place (it is chained over the rules before it): the listed row
    // of the same place must carry it, or the two reads did not see the same ruleset.
    const from = at + COMMENT.length - HASH_PREFIX.length;
    const hash = line.slice(from, line.slice(from).search(/[ "]/) + from);
    const row = listed.get(chain)?.rows[index];
    const columns = row === undefined ? undefined : interfacesOf(row);
    if (!columns || !row!.includes(`/* ${hash}`))
      throw new ListingMismatchError(`rule ${index + 1} of ${chain} is another rule in the listing`);
    if (columns.in === '*' && columns.out === '*') continue;
    const head = rule[0];
    const args = tokenize(line.slice(head.length));
    const hidden: string[] = [];
    for (const [column, options, flag] of [
      [columns.in, ['-i', '--in-interface'], '-i'],
      [columns.out, ['-o', '--out-interface'], '-o'],
    ] as const) {
      const stated = statedInterface(args, options);
      if (stated === column) continue;
      if (stated !== '*') throw new ListingMismatchError(`rule ${index + 1} of ${chain}: saved ${flag} ${stated}, listed ${column}`);
      hidden.push(...(column.startsWith('!') ? ['!', flag, column.slice(1)] : [flag, column]));
    }
    if (hidden.length === 0) continue;
    lines[i] = `${head}${hidden.join(' ')} ${line.slice(head.length)}`;
    changed = true;
  }
  const chains = new Set([...listed.keys(), ...seen.keys()]);
  for (const chain of chains) {
    if ((listed.get(chain)?.rows.length ?? 0) !== (seen.get(chain) ?? 0))
      throw new ListingMismatchError(`${chain} has another number of rules in the listing`);
  }
  return changed ? lines.join('\n') : save;
}
