// One family's netfilter state read from what the tools print: the iptables tables and the ipsets.

import type { IpFamily } from '../model/index.js';
import { parseIpsetSave, type SavedIpSet } from './ipset.js';
import { parseIptablesSave, type SavedTable } from './iptables-parse.js';
import { asSaveText } from './restore-as-save.js';

/** One family's netfilter state as the tools print it, parsed: tables → chains → rules, and the ipsets. */
export interface SavedDump {
  readonly family: IpFamily;
  /** By table name (`filter`, …); each rule keeps its saved text for people to read. */
  readonly tables: ReadonlyMap<string, SavedTable>;
  /**
   * Every set of the `ipset save` (one save holds both families; each set says its own): a rule naming a
   * set of the other family is told apart from one naming a set that does not exist.
   */
  readonly ipsets: ReadonlyMap<string, SavedIpSet>;
}

/**
 * Parses one family's `iptables-save` output (or a restore payload netfence writes, read as the save it
 * becomes; built-in chains it uses without declaring get `builtinPolicy`) and an `ipset save`.
 * Throws SaveParseError or IpsetParseError naming the line.
 */
export function parseSavedDump(family: IpFamily, iptables: string, ipsets: string, builtinPolicy = 'ACCEPT'): SavedDump {
  return { family, tables: parseIptablesSave(asSaveText(iptables, builtinPolicy)), ipsets: parseIpsetSave(ipsets) };
}
