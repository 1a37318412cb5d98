// Dual-stack: a pod with v4 and v6 addresses appears in both families, each with its own sets and chains.

import { Compiler, compile } from '../../../src/compile/index.js';
import type { DesiredState } from '../../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import {
  blockPeer,
  ingress,
  ips,
  labels,
  makePod,
  makePolicy,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
} from '../../helpers/builders.js';
import { viewPod, type AllowView, type DirectionView } from './compiled-view.js';
import { cluster, IP, NODE2 } from './fixtures.js';

const iso = (allows: AllowView[]): DirectionView => ({ policies: ['prod/p'], allows });

describe('compile: dual-stack', () => {
  const dual = makePod('prod', 'dual', '10.244.1.40', ips('10.244.1.40', 'fd00:1::40'), labels({ app: 'dual' }));
  const peer6 = makePod('prod', 'peer6', '10.244.2.41', onNode(NODE2), ips('10.244.2.41', 'fd00:2::41'), labels({ app: 'web' }));
  const policy = makePolicy(
    'prod',
    'p',
    selectPods(sel({ app: 'dual' })),
    ingress(rule([podPeer(sel({ app: 'web' })), blockPeer('fd00:99::/64')])),
  );

  it('v6 state holds the dual-stack pod with v6-only sets; v4 keeps the v4 side', () => {
    const { desired } = compile(cluster([policy], [dual, peer6]), settings());
    expect(viewPod(desired.v6, 'prod/dual', 'ingress')).toEqual(iso([{ peer: ['fd00:2::41'] }, { peer: ['fd00:99::/64'] }]));
    expect(viewPod(desired.v4, 'prod/dual', 'ingress')).toEqual(iso([{ peer: [IP.web, '10.244.2.41'] }]));
    expect(desired.v6.ipsets.map((s) => [s.name.slice(0, 4), s.family])).toEqual(
      desired.v6.ipsets.map(() => [expect.stringMatching(/^nf6[sbn]$/), 6]),
    );
    // v4-only local pods have no v6 workload chain.
    expect(viewPod(desired.v6, 'prod/db', 'ingress')).toBeUndefined();
  });

  // A long-lived compiler decides once per list of local pods whether all of them have an address of a family
  // (then a policy's targets need no filtering): a pod that loses its v4 address must leave the v4 targets.
  it('a long-lived compiler follows a local pod losing its IPv4 address, as a fresh compile does', () => {
    const text = (d: DesiredState): string => [d.v4, d.v6].map((f) => renderIpsetRestore(f.ipsets) + renderFullRestore(f)).join('\n');
    const only = makePolicy('prod', 'only', selectPods(sel({ app: 'dual' })), ingress(rule([podPeer(sel({ app: 'web' }))])));
    const v6only = { ...dual, ips: ['fd00:1::40'] };
    const compiler = new Compiler();
    for (const pod of [dual, v6only, dual]) {
      const snap = cluster([only], [pod, peer6]);
      const long = compiler.compile(snap, settings()).desired;
      expect(text(long)).toBe(text(compile(snap, settings()).desired));
      expect(long.v4.chains.some((c) => c.role.kind === 'policy' && c.role.policy === 'prod/only')).toBe(pod === dual);
    }
  });

  it('no v6 pod and no v6 pod CIDR: the v6 state is empty', () => {
    const { desired } = compile(cluster([policy]), settings());
    expect(desired.v6).toEqual({ family: 6, ipsets: [], chains: [], hooks: [] });
  });
});
