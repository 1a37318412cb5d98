import { loadRuleset, tracePacket, type Packet, type TraceResult } from '../../../src/trace/index.js';
import type { SavedIpSet } from '../../../src/render/index.js';

const packet = (over: Partial<Packet> = {}): Packet => ({
  src: '10.244.2.9',
  dst: '10.244.1.5',
  proto: 'tcp',
  dport: 80,
  inIface: 'eth0',
  outIface: 'cni0',
  ctstate: 'NEW',
  ...over,
});

const save = (policy: string, decls: string[], rules: string[]): string =>
  [
    '*filter',
    ':INPUT ACCEPT [0:0]',
    `:FORWARD ${policy} [0:0]`,
    ':OUTPUT ACCEPT [0:0]',
    ...decls.map((d) => `:${d} - [0:0]`),
    ...rules,
    'COMMIT',
    '',
  ].join('\n');

const HOOK = '-A FORWARD -m comment --comment "nf:hook netfence policy" -j nf-FORWARD';
const noSets = new Map<string, SavedIpSet>();
const run = (text: string, p: Partial<Packet> = {}, sets = noSets): TraceResult => tracePacket(loadRuleset(text), sets, packet(p));

describe('tracePacket: chain walking', () => {
  it('goto returns to the caller of the chain that jumped', () => {
    const text = save(
      'DROP',
      ['nf-FORWARD', 'nf-a', 'nf-b'],
      [
        HOOK,
        '-A nf-FORWARD -j nf-a',
        '-A nf-FORWARD -m mark --mark 0x10000/0x10000 -j ACCEPT',
        '-A nf-a -g nf-b',
        '-A nf-a -j DROP',
        '-A nf-b -j MARK --set-xmark 0x10000/0x10000',
      ],
    );
    const r = run(text);
    expect(r.verdict).toBe('ACCEPT');
    expect(r.decidedBy).toMatchObject({ chain: 'nf-FORWARD', ruleIndex: 2, owned: true });
    // nf-a's DROP is never reached: nf-b ended and control went back to nf-FORWARD.
    expect(r.steps.some((s) => s.chain === 'nf-a' && s.ruleIndex === 2)).toBe(false);
  });

  it('RETURN goes back to the rule after the jump', () => {
    const text = save(
      'ACCEPT',
      ['nf-FORWARD', 'nf-a'],
      [HOOK, '-A nf-FORWARD -j nf-a', '-A nf-FORWARD -j DROP', '-A nf-a -j RETURN', '-A nf-a -j ACCEPT'],
    );
    expect(run(text).decidedBy).toMatchObject({ chain: 'nf-FORWARD', ruleIndex: 2, action: 'DROP' });
  });

  it('MARK --set-xmark clears the mask, then xors the value', () => {
    const text = save(
      'ACCEPT',
      ['nf-FORWARD'],
      [
        HOOK,
        '-A nf-FORWARD -j MARK --set-xmark 0x30000/0xf0000',
        '-A nf-FORWARD -j MARK --set-xmark 0x10000/0x0',
        '-A nf-FORWARD -m mark --mark 0x20000/0x30000 -j DROP',
      ],
    );
    const r = tracePacket(loadRuleset(text), noSets, packet({ mark: 0xf4000 }));
    expect(r.finalMark).toBe(0x24000);
    expect(r.verdict).toBe('DROP');
  });

  it('falls through our chains: NO-VERDICT, and the built-in policy decides', () => {
    const text = save('DROP', ['nf-FORWARD'], [HOOK, '-A nf-FORWARD -o cni0 -j DROP']);
    const r = run(text, { outIface: 'eth0' });
    expect(r.verdict).toBe('NO-VERDICT');
    expect(r.after).toMatchObject({ verdict: 'DROP', decidedBy: { chain: 'FORWARD', ruleIndex: 0, text: 'policy DROP' } });
  });

  it('a foreign rule below our hook decides only after we gave no verdict', () => {
    const text = save(
      'ACCEPT',
      ['nf-FORWARD', 'KUBE-FORWARD'],
      [HOOK, '-A FORWARD -j KUBE-FORWARD', '-A KUBE-FORWARD -d 10.244.1.0/24 -j DROP'],
    );
    const r = run(text);
    expect(r.verdict).toBe('NO-VERDICT');
    expect(r.after).toMatchObject({ verdict: 'DROP', decidedBy: { chain: 'KUBE-FORWARD', ruleIndex: 1, owned: false } });
  });

  it('a foreign rule above our hook that decides is reported as such', () => {
    const text = save('ACCEPT', ['nf-FORWARD'], ['-A FORWARD -s 10.244.2.0/24 -j ACCEPT', HOOK, '-A nf-FORWARD -j DROP']);
    const r = run(text);
    expect(r.verdict).toBe('ACCEPT');
    expect(r.decidedBy).toMatchObject({ chain: 'FORWARD', ruleIndex: 1, owned: false });
    expect(r.warnings.join('\n')).toMatch(/above the netfence hook/);
  });

  it('a foreign rule above our hook that cannot be evaluated is flagged as able to decide', () => {
    const text = save('ACCEPT', ['nf-FORWARD'], ['-A FORWARD -m tcp -p tcp --dport 80 -j ACCEPT', HOOK, '-A nf-FORWARD -j DROP']);
    const r = run(text);
    expect(r.verdict).toBe('DROP');
    expect(r.steps[0]).toMatchObject({ chain: 'FORWARD', ruleIndex: 1, result: 'not-evaluated' });
    expect(r.warnings.join('\n')).toMatch(/FORWARD #1 not evaluated .*could decide this packet before netfence/);
  });

  it('REJECT counts as a drop verdict, naming REJECT', () => {
    const text = save('ACCEPT', ['nf-FORWARD'], [HOOK, '-A nf-FORWARD -j REJECT --reject-with icmp-port-unreachable']);
    expect(run(text)).toMatchObject({ verdict: 'DROP', decidedBy: { action: 'REJECT' } });
  });

  it('without our hook the packet never meets our chains', () => {
    const text = save('ACCEPT', ['nf-FORWARD'], ['-A nf-FORWARD -j DROP']);
    expect(run(text)).toMatchObject({ verdict: 'NO-VERDICT', hookFound: false });
  });

  it('stops on a jump loop instead of spinning', () => {
    const text = save('ACCEPT', ['nf-FORWARD', 'nf-a'], [HOOK, '-A nf-FORWARD -j nf-a', '-A nf-a -j nf-FORWARD']);
    const r = tracePacket(loadRuleset(text), noSets, packet(), { maxSteps: 50 });
    expect(r.verdict).toBe('NO-VERDICT');
    expect(r.warnings.join('')).toMatch(/loop/);
  });
});

describe('tracePacket: attribution', () => {
  const text = save(
    'ACCEPT',
    ['nf-FORWARD', 'nf-tw-x', 'nf-pi-p'],
    [
      HOOK,
      '-A nf-FORWARD -m comment --comment "nf:a" -j MARK --set-xmark 0x0/0xf0000',
      '-A nf-FORWARD -o cni0 -m comment --comment "nf:b ingress of local pods" -j nf-tw-x',
      '-A nf-FORWARD -m comment --comment "nf:c policy accepted packet" -m mark --mark 0x10000/0x10000 -j ACCEPT',
      '-A nf-tw-x -m comment --comment "nf:d" -j nf-pi-p',
      '-A nf-tw-x -m comment --comment "nf:e" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-A nf-tw-x -m comment --comment "nf:f web/api isolated for ingress: no policy allowed" -j DROP',
      '-A nf-pi-p -p tcp -m comment --comment "nf:g web/allow-lb ingress:2" -m multiport --dports 80,8000:8100 -j MARK --set-xmark 0x10000/0x10000',
    ],
  );

  it('names the policy and rule whose mark the final ACCEPT tested', () => {
    const r = run(text, { dport: 8050 });
    expect(r.verdict).toBe('ACCEPT');
    expect(r.decidedBy).toMatchObject({
      chain: 'nf-FORWARD',
      ruleIndex: 3,
      policy: 'web/allow-lb',
      rule: 'ingress:2',
      direction: 'ingress',
    });
  });

  it('names the isolated pod when nothing allowed the packet', () => {
    const r = run(text, { dport: 22 });
    expect(r.verdict).toBe('DROP');
    expect(r.decidedBy).toMatchObject({ chain: 'nf-tw-x', ruleIndex: 3, pod: 'web/api', direction: 'ingress' });
    expect(r.steps.find((s) => s.chain === 'nf-pi-p')).toMatchObject({ result: 'no-match', detail: 'dport 80,8000-8100' });
  });
});
