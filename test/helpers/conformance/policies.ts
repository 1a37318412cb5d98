// Short spellings for the parts of a NetworkPolicy spec that cases repeat, so a case table reads
// like the YAML it stands for: `{ podSelector: sel({ pod: 'a' }), ingress: [{ from: [pods({ pod: 'b' })] }] }`.

import type { Protocol } from '../../../src/model/index.js';
import type { PeerDoc, PortDoc, SelectorDoc } from './manifests.js';
import type { Labels } from './model.js';

/** `{}`: selects everything. */
export const ALL: SelectorDoc = {};

export const sel = (matchLabels: Labels): SelectorDoc => ({ matchLabels });

type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
export const expr = (key: string, operator: Operator, ...values: string[]): SelectorDoc => ({
  matchExpressions: [{ key, operator, ...(operator === 'In' || operator === 'NotIn' ? { values } : {}) }],
});

/** Peers. */
export const pods = (matchLabels: Labels): PeerDoc => ({ podSelector: sel(matchLabels) });
export const namespaces = (matchLabels: Labels): PeerDoc => ({ namespaceSelector: sel(matchLabels) });
export const podsInNamespaces = (podSelector: SelectorDoc, namespaceSelector: SelectorDoc): PeerDoc => ({ podSelector, namespaceSelector });
export const cidr = (block: string, ...except: string[]): PeerDoc => ({ ipBlock: { cidr: block, ...(except.length ? { except } : {}) } });

/** Ports: a number or a named port, TCP unless said otherwise. */
export const port = (p: number | string, protocol?: Protocol): PortDoc => ({ port: p, ...(protocol ? { protocol } : {}) });
export const portRange = (from: number, to: number, protocol?: Protocol): PortDoc => ({
  port: from,
  endPort: to,
  ...(protocol ? { protocol } : {}),
});
export const anyPortOf = (protocol: Protocol): PortDoc => ({ protocol });
