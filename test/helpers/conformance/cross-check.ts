// A second opinion on each case's expected matrix: the spec-level oracle (test/helpers/oracle.ts,
// written apart from src/compile) judges every pod-to-pod cell of the same cluster. A disagreement
// means the case or the oracle misreads the spec, which is worth knowing before blaming the kernel.
// Cells with a node endpoint are left out: the oracle knows pods, not node addresses.

import { cellOf } from '../../../sandbox/index.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';
import { Oracle } from '../oracle.js';
import type { Check } from './cases.js';

export function oracleDisagreements(snapshot: ClusterSnapshot, check: Check, family: 4 | 6 = 4): string[] {
  const oracle = new Oracle(snapshot);
  // The address the probe uses: the pod's address of the family the cluster is probed on.
  const ipOf = (key: string): string | undefined =>
    snapshot.pods.find((p) => `${p.namespace}/${p.name}` === key)?.ips.find((ip) => ip.includes(':') === (family === 6));
  const out: string[] = [];
  for (const from of check.expect.froms) {
    for (const to of check.expect.tos) {
      const src = ipOf(from);
      const dst = ipOf(to);
      if (src === undefined || dst === undefined || from === to) continue;
      const expected = cellOf(check.expect, from, to);
      const verdict = oracle.allows({ src, dst, proto: check.protocol.toLowerCase() as 'tcp' | 'udp' | 'sctp', port: check.port });
      if (verdict !== expected)
        out.push(
          `  ${from} -> ${to}: the case expects ${expected ? 'reachable' : 'blocked'}, the oracle says ${verdict ? 'reachable' : 'blocked'}`,
        );
    }
  }
  return out;
}
