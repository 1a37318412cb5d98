// A restore payload (what `netfence compile` prints: `-N`, `-I chain n`, rules for built-in chains it never
// declares) read as the save text it becomes once restored, so every reader takes one format.

import { KERNEL_CHAINS } from '../model/index.js';
import { declareChainLine, ruleLine } from './iptables-render.js';

/** A restore payload as iptables-save would print it once restored; save text as is. */
export function asSaveText(text: string, builtinPolicy = 'ACCEPT'): string {
  return /^-[IN] /m.test(text) || undeclaredBuiltins(text).length > 0 ? restoreToSave(text, builtinPolicy) : text;
}

function undeclaredBuiltins(text: string): string[] {
  return KERNEL_CHAINS.filter((c) => new RegExp(`^-A ${c} `, 'm').test(text) && !new RegExp(`^:${c} `, 'm').test(text));
}

/** Replays a restore payload's chain edits in order and prints the result as iptables-save would. */
function restoreToSave(text: string, builtinPolicy: string): string {
  const out: string[] = [];
  let chains: Map<string, { policy: string; rules: string[] }> | undefined;
  const declare = (name: string, policy: string) => {
    if (chains && !chains.has(name)) chains.set(name, { policy, rules: [] });
  };
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line.startsWith('*')) {
      chains = new Map();
      out.push(line);
      continue;
    }
    if (!chains || line === '' || line.startsWith('#')) {
      if (line !== '') out.push(line);
      continue;
    }
    if (line === 'COMMIT') {
      for (const [name, c] of chains) out.push(declareChainLine(name, c.policy));
      for (const [name, c] of chains) for (const r of c.rules) out.push(ruleLine('append', name, r));
      out.push('COMMIT');
      chains = undefined;
      continue;
    }
    const words = line.split(' ');
    const [verb, chain = ''] = words;
    const builtin = (KERNEL_CHAINS as readonly string[]).includes(chain);
    if (line.startsWith(':')) declare((words[0] ?? '').slice(1), words[1] ?? '-');
    else if (verb === '-N') declare(chain, '-');
    else if (verb === '-A' || verb === '-I') {
      if (builtin) declare(chain, builtinPolicy);
      const target = chains.get(chain);
      if (!target) {
        out.push(line); // left for the parser to report with its line number
        continue;
      }
      const at = verb === '-I' && /^\d+$/.test(words[2] ?? '') ? Number(words[2]) : verb === '-I' ? 1 : undefined;
      const body = words.slice(at !== undefined && /^\d+$/.test(words[2] ?? '') ? 3 : 2).join(' ');
      if (at === undefined) target.rules.push(body);
      else target.rules.splice(at - 1, 0, body);
    } else out.push(line);
  }
  return `${out.join('\n')}\n`;
}
