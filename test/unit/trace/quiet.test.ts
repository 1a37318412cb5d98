// `tracePacket(…, { steps: false })` (what `netfence map` traces thousands of packets with) records no steps
// and no words for failed matches, and must decide exactly as a full trace does: the same verdict, the same
// rule deciding, the same allowances. Seeded random clusters, every pod pair, both directions of each node.

import { describe, expect, it } from '@jest/globals';
import { compile } from '../../../src/compile/index.js';
import { defaultNodeSettings, type ClusterSnapshot } from '../../../src/model/index.js';
import { tracePacket, type TraceResult } from '../../../src/trace/index.js';
import { nodeRulesOf } from '../../../src/why/index.js';
import { randomCluster } from '../compile/random-cluster.js';

const NODES = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] },
  { name: 'node-2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'] },
];

/** What a trace decided, without the walk that led there. */
const decision = (t: TraceResult) => ({
  verdict: t.verdict,
  decidedBy: t.decidedBy,
  after: t.after,
  allowedBy: t.allowedBy,
  finalMark: t.finalMark,
  audit: t.audit,
  warnings: t.warnings,
});

describe('a trace without steps', () => {
  it('decides as a full trace does, for every pod pair of 8 seeded clusters', () => {
    let traced = 0;
    for (let seed = 1; seed <= 8; seed++) {
      const snapshot: ClusterSnapshot = { ...randomCluster(seed), nodes: NODES };
      const pods = snapshot.pods.filter((p) => p.ips.some((ip) => !ip.includes(':')) && !p.hostNetwork);
      for (const node of NODES) {
        const settings = defaultNodeSettings(node.name, node.podCidrs);
        const rules = nodeRulesOf(snapshot, settings, node.name, compile(snapshot, settings).desired.v4);
        for (const src of pods)
          for (const dst of pods) {
            for (const [inIface, outIface] of [
              [settings.bridge, 'eth0'],
              ['eth0', settings.bridge],
            ] as const) {
              const packet = {
                src: src.ips[0]!,
                dst: dst.ips[0]!,
                proto: 'tcp' as const,
                dport: 80,
                inIface,
                outIface,
                ctstate: 'NEW' as const,
              };
              const full = tracePacket(rules.ruleset, rules.ipsets, packet, { chainPrefix: settings.chainPrefix });
              const quiet = tracePacket(rules.ruleset, rules.ipsets, packet, { chainPrefix: settings.chainPrefix, steps: false });
              expect({ seed, node: node.name, packet, ...decision(quiet) }).toEqual({ seed, node: node.name, packet, ...decision(full) });
              expect(quiet.steps.filter((s) => s.result !== 'policy')).toEqual([]);
              traced++;
            }
          }
      }
    }
    expect(traced).toBeGreaterThan(1000);
  });
});
