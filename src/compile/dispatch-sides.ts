// The dispatch tree of one side, rendered whole: which root and child names it takes, the rules that end
// every chain of it, and the role of its chains. A pure function of plain inputs (the side, the family, the
// entries, the chain names and the settings); compile.ts only decides when to call it again.

import type { Chain, IpFamily, NodeSettings, Rule } from '../model/index.js';
import { formatCidr, parseCidr } from '../model/address.js';
import { dispatchChains, type DispatchEntry } from './dispatch.js';
import { flowLogRules } from './flow-log.js';
import type { ChainNames } from './names.js';
import type { DispatchSide } from './render-memory.js';

/** `from`: pods' own traffic (FORWARD); `to`: traffic to pods (FORWARD); `host`: pods to this node (INPUT). */
export function dispatchSideChains(
  side: DispatchSide,
  family: IpFamily,
  entries: readonly DispatchEntry[],
  names: ChainNames,
  settings: NodeSettings,
): Chain[] {
  const direction = side === 'to' ? 'to' : 'from';
  const built = dispatchChains({
    root: side === 'host' ? names.hostDispatch : side === 'from' ? names.fromDispatch : names.toDispatch,
    direction,
    family,
    entries,
    childName: side === 'host' ? names.hostDispatchChild : side === 'from' ? names.fromDispatchChild : names.toDispatchChild,
    endRules: unknownPodRules(direction, family, settings),
  });
  return side === 'host' ? built.map((chain): Chain => ({ ...chain, role: { kind: 'host-dispatch' } })) : built;
}

/**
 * Fail-closed: an address of this node's pod CIDR that reached the end of the dispatch tree belongs to
 * no pod this node programs, so it is dropped (logged first when flow logs are on); `unknownPods:
 * fail-open` lets it through instead.
 */
function unknownPodRules(direction: 'from' | 'to', family: IpFamily, settings: NodeSettings): Rule[] {
  if (settings.unknownPods === 'fail-open') return [];
  return settings.podCidrs.flatMap((text): Rule[] => {
    const parsed = parseCidr(text);
    if (!parsed.ok || parsed.cidr.family !== family) return [];
    const cidr = formatCidr(parsed.cidr);
    const match: Rule['match'] = [direction === 'from' ? { kind: 'src-net', cidr } : { kind: 'dst-net', cidr }];
    return [
      ...flowLogRules(settings.flowLog, { kind: 'unknown-pod', direction }, match),
      { match, action: { kind: 'drop' }, comment: 'unknown local pod, fail-closed' },
    ];
  });
}
