// Per-workload chains: nf-tw-<id> (ingress to a local pod) and nf-fw-<id> (egress from it).

import type { Chain, ChainName, NodeSettings, Rule } from '../model/index.js';
import { flowLogRules } from './flow-log.js';
import type { Direction } from './policy-chains.js';

export interface WorkloadChainInput {
  readonly name: ChainName;
  readonly podKey: string;
  readonly ip: string;
  readonly hostBits: number;
  readonly direction: Direction;
  /** Policy chains that select the pod in this direction, in a stable order. Empty: not isolated. */
  readonly policyChains: readonly ChainName[];
}

export function workloadChain(input: WorkloadChainInput, settings: NodeSettings): Chain {
  const { accept, all } = settings.marks;
  const self = `${input.ip}/${input.hostBits}`;
  const rules: Rule[] = [
    // "Connections are judged on their first packet": replies and later packets of an allowed flow pass.
    { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
    { match: [{ kind: 'ctstate', states: ['INVALID'] }], action: { kind: 'drop' } },
    { match: [], action: { kind: 'set-mark', value: 0, mask: all } },
    // A pod reaching itself (also through a Service that DNATs back to it: hairpin) is always allowed.
    {
      match: [input.direction === 'ingress' ? { kind: 'src-net', cidr: self } : { kind: 'dst-net', cidr: self }],
      action: { kind: 'accept' },
      comment: 'pod to itself',
    },
  ];
  if (input.policyChains.length === 0) {
    // "a pod is not isolated for <direction>" when no policy selects it with that policy type.
    rules.push({ match: [], action: { kind: 'set-mark', value: accept, mask: accept }, comment: `${input.podKey} not isolated for ${input.direction}` });
  } else {
    for (const target of input.policyChains) {
      rules.push({ match: [], action: { kind: 'jump', target } });
      rules.push({ match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } });
    }
    rules.push(...flowLogRules(settings.flowLog, { kind: 'isolated', chain: input.name }));
    rules.push({ match: [], action: { kind: 'drop' }, comment: `${input.podKey} isolated for ${input.direction}: no policy allowed` });
  }
  const role = { kind: 'workload', direction: input.direction, pod: input.podKey, ip: input.ip } as const;
  return { name: input.name, rules, role };
}
