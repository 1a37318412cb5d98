import { Ajv } from 'ajv';
import { compile } from '../../../src/compile/index.js';
import { filterReport, formatReport, inspectRuleset, INSPECT_REPORT_SCHEMA, type InspectReport } from '../../../src/inspect/index.js';
import { parseIpsetSave, renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import { formatTrace, loadRuleset, packetFor, tracePacket, WIDTH } from '../../../src/trace/index.js';
import { goldenCaseNames, loadGoldenCase, packetAddress, packetFamily } from '../../helpers/golden.js';
import { ingress, makeNamespace, makePod, makePolicy, podPeer, rule, sel, selectPods, settings } from '../../helpers/builders.js';

const validate = new Ajv({ allErrors: true, strict: true }).compile(INSPECT_REPORT_SCHEMA);

function golden(name: string) {
  const c = loadGoldenCase(name);
  const ruleset = loadRuleset(c.rules);
  const ipsets = parseIpsetSave(c.ipsets);
  return { c, ruleset, ipsets, report: inspectRuleset(ruleset, ipsets, { chainPrefix: 'nf-' }) };
}

const longLines = (text: string): string[] => text.split('\n').filter((l) => l.length > WIDTH);

describe.each(goldenCaseNames())('inspect rules/%s', (name) => {
  const { c, ruleset, ipsets, report } = golden(name);
  // A dual-stack case's IPv6 payload is inspected the same way (its pods are those with an IPv6 address).
  const v6 =
    c.v6 &&
    (() => {
      const rs = loadRuleset(c.v6.rules);
      const sets = parseIpsetSave(c.v6.ipsets);
      return { ruleset: rs, ipsets: sets, report: inspectRuleset(rs, sets, { chainPrefix: 'nf-' }) };
    })();
  const byFamily = { 4: { ruleset, ipsets, report }, ...(v6 ? { 6: v6 } : {}) } as Partial<
    Record<4 | 6, { ruleset: typeof ruleset; ipsets: typeof ipsets; report: InspectReport }>
  >;

  it('--json output matches the shipped schema', () => {
    for (const r of Object.values(byFamily)) {
      const ok = validate(JSON.parse(JSON.stringify(r.report)));
      expect(validate.errors ?? []).toEqual([]);
      expect(ok).toBe(true);
    }
  });

  it('finds every local pod of node-1 by name, with both workload chains (per family: the pods with an address of it)', () => {
    for (const [family, r] of Object.entries(byFamily)) {
      const hasFamily = (ips: readonly string[]) => ips.some((a) => a.includes(':') === (family === '6'));
      const local = c.snapshot.pods
        .filter((p) => p.nodeName === 'node-1' && hasFamily(p.ips) && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed')
        .map((p) => `${p.namespace}/${p.name}`);
      expect(r.report.pods.map((p) => p.pod).sort()).toEqual(local.sort());
      for (const p of r.report.pods)
        expect([p.ingress?.chain, p.egress?.chain]).toEqual([expect.stringMatching(/^nf-tw-/), expect.stringMatching(/^nf-fw-/)]);
    }
  });

  it('reports no problems for what the compiler wrote', () => {
    for (const r of Object.values(byFamily)) expect(r.report.problems).toEqual([]);
  });

  it('human output fits 80 columns (pods and policies)', () => {
    for (const r of Object.values(byFamily)) {
      expect(longLines(formatReport(r.report))).toEqual([]);
      expect(longLines(formatReport(r.report, { byPolicy: true }))).toEqual([]);
    }
  });

  it('trace output fits 80 columns for every packet of the case', () => {
    for (const p of c.packets) {
      const family = packetFamily(p);
      const r = byFamily[family]!;
      const packet = packetFor(
        { src: packetAddress(c, p.from, family), dst: packetAddress(c, p.to, family), proto: p.proto, dport: p.port },
        { bridge: 'cni0', uplink: 'eth0', podCidrs: c.settings.podCidrs },
      );
      const text = formatTrace(tracePacket(r.ruleset, r.ipsets, packet), packet, {
        ruleset: r.ruleset,
        chainPrefix: 'nf-',
        srcLabel: p.from,
        dstLabel: p.to,
      });
      expect(longLines(text)).toEqual([]);
    }
  });
});

describe('inspect rules/seed-db-policy', () => {
  it('a trace stopped by an ipBlock except says what the except set held', () => {
    const { c, ruleset, ipsets } = golden('seed-db-policy');
    // 172.17.1.5 is in 172.17.0.0/16 but in its except 172.17.1.0/24.
    const packet = packetFor(
      { src: '172.17.1.5', dst: '10.244.1.10', proto: 'tcp', dport: 6379 },
      { bridge: 'cni0', uplink: 'eth0', podCidrs: c.settings.podCidrs },
    );
    const result = tracePacket(ruleset, ipsets, packet);
    expect(result.verdict).toBe('DROP');
    expect(result.steps.map((s) => s.detail)).toContainEqual(expect.stringMatching(/^src ! in set nf4x:\S+ \(except 172\.17\.1\.0\/24\)$/));
  });

  const { report } = golden('seed-db-policy');
  const db = report.pods.find((p) => p.pod === 'default/db')!;

  it('maps default/db to its chains, isolation and policy', () => {
    expect(db.ip).toBe('10.244.1.10');
    expect(db.ingress).toMatchObject({ isolated: true, policies: ['default/test-network-policy'] });
    expect(db.egress).toMatchObject({ isolated: true, policies: ['default/test-network-policy'] });
    expect(db.dispatch.ingress).toEqual([expect.objectContaining({ chain: 'nf-to-wl-dispatch', ruleIndex: 1 })]);
    expect(report.pods.find((p) => p.pod === 'default/frontend')?.ingress).toMatchObject({ isolated: false, policies: [] });
    expect(report.failClosedCidrs).toEqual(['10.244.1.0/24']);
    expect(report.hookPosition).toBe(1);
  });

  it('reads each policy rule back: protocol, ports, peer set with members', () => {
    const pi = report.policies.find((p) => p.direction === 'ingress')!;
    expect(pi.usedBy).toEqual(['default/db']);
    expect(pi.rules.map((r) => [r.rule, r.protocol, r.ports, r.peer.kind])).toEqual([
      ['ingress:0', 'tcp', '6379', 'set'],
      ['ingress:0', 'tcp', '6379', 'set'],
      ['ingress:0', 'tcp', '6379', 'block'],
    ]);
    // ipBlock {cidr: 172.17.0.0/16, except: [172.17.1.0/24]}: the cidr and the except, each as written.
    expect(pi.rules[2]?.peer).toMatchObject({
      kind: 'block',
      cidrs: { type: 'hash:net', members: 1, sample: ['172.17.0.0/16'] },
      excepts: { type: 'hash:net', members: 1, sample: ['172.17.1.0/24'] },
    });
    expect(formatReport(report)).toContain('tcp port 6379 from 172.17.0.0/16 except 172.17.1.0/24');
  });

  it.each([
    ['pod by name', { pod: 'default/frontend' }, ['default/frontend'], 0],
    ['pod by IP', { pod: '10.244.1.10' }, ['default/db'], 2],
    ['policy', { policy: 'default/test-network-policy' }, ['default/db'], 2],
    ['unknown pod', { pod: 'default/nope' }, [], 0],
  ])('filter by %s', (_n, filter, pods, policies) => {
    const r = filterReport(report, filter);
    expect(r.pods.map((p) => p.pod)).toEqual(pods);
    expect(r.policies).toHaveLength(policies);
  });
});

describe('inspect: rules read back for special cases', () => {
  it('a named port shows its hash:ip,port set', () => {
    const pi = golden('named-port-serve-80').report.policies[0]!;
    expect(pi.rules[0]).toMatchObject({
      ports: 'named',
      namedPorts: { type: 'hash:ip,port', members: 2, sample: ['10.244.1.20,tcp:80', '10.244.1.21,tcp:8080'] },
    });
  });

  it('an invalid policy says it allows nothing', () => {
    const notes = golden('invalid-policy-fails-closed').report.policies.map((p) => p.note);
    expect(notes).toContain('invalid: allows nothing');
  });
});

describe('inspect: problems', () => {
  const { c } = golden('seed-db-policy');
  // The compiled payload as iptables-save would print it after apply, edited by hand.
  const base = c.rules
    .replace(/^-I FORWARD 1 /m, '-A FORWARD ')
    .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n');
  const edited = base
    .replace(/^-A FORWARD /m, '-A FORWARD -i docker0 -j ACCEPT\n-A FORWARD ')
    .replace('COMMIT', ':nf-stale - [0:0]\n-A nf-stale -j DROP\n-A nf-FORWARD -m tcp -p tcp --dport 22 -j ACCEPT\nCOMMIT');
  const report: InspectReport = inspectRuleset(loadRuleset(edited), new Map(), { chainPrefix: 'nf-' });
  const kinds = report.problems.map((p) => `${p.kind} ${p.chain ?? ''}${p.ruleIndex !== undefined ? ` #${p.ruleIndex}` : ''}`);

  it.each([
    ['foreign rule above the hook', 'foreign-above-hook FORWARD #1'],
    ['rule without our hash in an owned chain', 'owned-unexpected nf-FORWARD #7'],
    ['owned chain nothing references', 'unreferenced-chain nf-stale'],
    ['rule in owned chain without hash (nf-stale)', 'owned-unexpected nf-stale #1'],
  ])('%s', (_n, kind) => expect(kinds).toContain(kind));

  it('sets missing from the ipset dump are named once each', () => {
    expect(report.problems.filter((p) => p.kind === 'missing-set')).toHaveLength(5);
    expect(validate(JSON.parse(JSON.stringify(report)))).toBe(true);
    expect(report.forwardPolicy).toBe('DROP');
    expect(report.hookPosition).toBe(2);
  });

  it('a ruleset without the hook says so', () => {
    const r = inspectRuleset(loadRuleset(base.replace(/^-A FORWARD .*\n/m, '')), parseIpsetSave(c.ipsets), { chainPrefix: 'nf-' });
    expect(r.problems.map((p) => p.kind)).toEqual(['missing-hook', 'unreferenced-chain']);
    expect(longLines(formatReport(r))).toEqual([]);
  });
});

describe('inspect and trace through a dispatch tree (more pods than one chain lists)', () => {
  const pods = Array.from({ length: 40 }, (_, i) => makePod('big', `p${i}`, `10.244.1.${i + 2}`));
  const snapshot = {
    nodes: [],
    namespaces: [makeNamespace('big')],
    pods,
    policies: [makePolicy('big', 'only-p0', selectPods(sel({})), ingress(rule([podPeer(sel({ 'no-such': 'label' }))])))],
  };
  const desired = compile(snapshot, settings()).desired.v4;
  const ruleset = loadRuleset(renderFullRestore(desired));
  const ipsets = parseIpsetSave(renderIpsetRestore(desired.ipsets));
  const report = inspectRuleset(ruleset, ipsets, { chainPrefix: 'nf-' });

  it('finds all 40 pods through the child chains', () => {
    expect(report.pods).toHaveLength(40);
    const p33 = report.pods.find((p) => p.pod === 'big/p33')!;
    expect(p33.dispatch.ingress.length).toBeGreaterThan(1);
    expect(p33.dispatch.ingress[1]?.chain).toMatch(/^nf-td-/);
    expect(report.problems).toEqual([]);
  });

  it('trace reaches the right workload chain through the tree and drops (isolated)', () => {
    const packet = packetFor(
      { src: '10.244.2.1', dst: '10.244.1.35', proto: 'tcp', dport: 80 },
      { bridge: 'cni0', uplink: 'eth0', podCidrs: ['10.244.1.0/24'] },
    );
    const r = tracePacket(ruleset, ipsets, packet);
    expect(r.verdict).toBe('DROP');
    expect(r.decidedBy).toMatchObject({ pod: 'big/p33', direction: 'ingress' });
    expect(r.steps.filter((s) => s.chain.startsWith('nf-to-wl-dispatch') || s.chain.startsWith('nf-td-')).length).toBeLessThan(20);
  });
});
