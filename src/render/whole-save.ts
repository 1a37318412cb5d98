// A save read as a whole, the way the drift check, the one-shot commands and the backend detection need
// it: its content without the timestamps, the filter table alone, the rule count, the kubelet's marker
// chain, and iptables-nft's note on a table it cannot show.

import { declareChainLine } from './iptables-render.js';

/** The save without its comment lines: iptables-save's header and footer carry the time, the rest is the ruleset. */
export const saveWithoutComments = (save: string): string => save.replace(/^#.*\n?/gm, '');

/** `-A …` lines, also as `iptables-save -c` prints them (`[packets:bytes] -A …`). */
export function countRules(saveOutput: string): number {
  return saveOutput.split('\n').filter((l) => l.startsWith('-') || l.startsWith('[')).length;
}

const KUBELET_HINT = /^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY) /m;

/** Kubelet (≥ 1.17) declares one of these chains in the backend it, and so kube-proxy, writes to. */
export const hasKubeletHint = (save: string): boolean => KUBELET_HINT.test(save);

/**
 * The `*filter` … `COMMIT` section of a whole-ruleset save, as `iptables-save -t filter` prints it (less its
 * comment lines, which carry only the time); undefined when the save has no filter table.
 */
export function filterTableOf(save: string): string | undefined {
  const start = save.startsWith('*filter\n') ? 0 : save.indexOf('\n*filter\n') + 1;
  if (start === 0 && !save.startsWith('*filter\n')) return undefined;
  const end = save.indexOf('\nCOMMIT\n', start);
  if (end < 0) return save.endsWith('\nCOMMIT') ? save.slice(start) + '\n' : undefined;
  return save.slice(start, end + '\nCOMMIT\n'.length);
}

const INCOMPATIBLE_FILTER = /^# Table `filter' /m;

/** iptables-nft prints "# Table `filter' is incompatible, use 'nft' tool." for a table it cannot show. */
export const filterIncompatible = (save: string): boolean => INCOMPATIBLE_FILTER.test(save);

/** The filter table with nothing in it, as `iptables-save -t filter` prints it before anything was written. */
export const EMPTY_FILTER_SAVE = [
  '*filter',
  ...['INPUT', 'FORWARD', 'OUTPUT'].map((c) => declareChainLine(c, 'ACCEPT')),
  'COMMIT',
  '',
].join('\n');
