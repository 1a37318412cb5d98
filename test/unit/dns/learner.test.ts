// The DNS agent's decisions, packet by packet: an answer grants only in reply to the pod's own pending query,
// to the sets of that pod and family whose domainNames match the QUERIED name, with timeout
// clamp(max(TTL, minTtl), maxTtl) and the provenance comment; and the bounds (pending per pod, learned per node).
// Expectations come from docs/dns-egress-design.md and the contract in src/model/dns-egress.ts.

import { DnsLearner } from '../../../src/dns/learner.js';
import { defaultDnsLearningSettings, type DnsLearnedSet, type DnsLearningPlan } from '../../../src/model/dns-egress.js';
import { dnsMessage, tcpFramed, tcpPacket, udpPacket, type TestRecord } from '../../helpers/dns-message.js';

const POD_A = '10.0.1.2';
const POD_B = '10.0.1.3';
const POD_A6 = 'fd00::1:2';
const DNS = '10.0.9.9';
const DNS6 = 'fd00::9:9';
const T0 = 1_764_000_000_000;

const set = (setName: string, podAddress: string, domainNames: string[], family: 4 | 6 = 4): DnsLearnedSet => ({
  setName,
  family,
  pod: podAddress === POD_B ? 'x/b' : 'x/a',
  podAddress,
  policy: 'egress-by-name',
  ruleIndex: 0,
  domainNames,
});
const plan = (sets: DnsLearnedSet[], settings: Partial<DnsLearningPlan['settings']> = {}): DnsLearningPlan => ({
  settings: { ...defaultDnsLearningSettings, ...settings },
  sets,
});

const query = (pod: string, port: number, id: number, name: string, type: 'A' | 'AAAA' = 'A', server = DNS): Buffer =>
  udpPacket(pod, port, server, 53, dnsMessage({ id, response: false, name, type }));
const answer = (
  pod: string,
  port: number,
  id: number,
  name: string,
  answers: TestRecord[],
  type: 'A' | 'AAAA' = 'A',
  server = DNS,
): Buffer => udpPacket(server, 53, pod, port, dnsMessage({ id, response: true, name, type, answers }));
const A = (name: string, value: string, ttl = 300): TestRecord => ({ name, type: 'A', value, ttl });

describe('an answer grants only in reply to the pod’s own query', () => {
  const sets = [set('a4', POD_A, ['good.example', '*.wild.example']), set('b4', POD_B, ['good.example'])];

  it('query, then its answer: the addresses go to the pod’s set with the clamped TTL and the provenance comment', () => {
    const l = new DnsLearner(plan(sets));
    expect(l.query(query(POD_A, 40000, 7, 'Good.Example'), T0)).toBe('recorded');
    const d = l.answer(
      answer(POD_A, 40000, 7, 'good.example', [A('good.example', '198.51.100.10', 5), A('good.example', '198.51.100.11', 600)]),
      T0 + 1,
    );
    expect(d.refused).toBeUndefined();
    expect(d.adds).toEqual([
      {
        set: 'a4',
        members: [
          { member: '198.51.100.10', timeout: 30, comment: '1764000000 good.example' },
          { member: '198.51.100.11', timeout: 600, comment: '1764000000 good.example' },
        ],
      },
    ]);
  });

  it.each([
    ['no query at all', () => undefined, answer(POD_A, 40000, 7, 'good.example', [A('good.example', '198.51.100.10')])],
    ['another transaction id', 8, answer(POD_A, 40000, 7, 'good.example', [A('good.example', '198.51.100.10')])],
    ['another pod port', 7, answer(POD_A, 40001, 7, 'good.example', [A('good.example', '198.51.100.10')])],
    ['another server', 7, answer(POD_A, 40000, 7, 'good.example', [A('good.example', '198.51.100.10')], 'A', '10.0.9.10')],
  ])('%s: unsolicited, grants nothing', (_, id, packet) => {
    const l = new DnsLearner(plan(sets));
    if (typeof id === 'number') l.query(query(POD_A, 40000, id, 'good.example'), T0);
    const d = l.answer(packet as Buffer, T0 + 1);
    expect(d).toMatchObject({ adds: [], refused: 'unsolicited' });
  });

  it('an answer to another question than the pod asked grants nothing', () => {
    const l = new DnsLearner(plan(sets));
    l.query(query(POD_A, 40000, 7, 'good.example'), T0);
    const d = l.answer(answer(POD_A, 40000, 7, 'evil.example', [A('evil.example', '203.0.113.66')]), T0);
    expect(d).toMatchObject({ adds: [], refused: 'mismatch' });
  });

  it('one pod’s lookup opens nothing for another pod, even with the same rule', () => {
    const l = new DnsLearner(plan(sets));
    l.query(query(POD_A, 40000, 7, 'good.example'), T0);
    // The same answer sent to pod b (which asked nothing) grants b nothing.
    expect(l.answer(answer(POD_B, 40000, 7, 'good.example', [A('good.example', '198.51.100.10')]), T0)).toMatchObject({
      adds: [],
      refused: 'unsolicited',
    });
    const d = l.answer(answer(POD_A, 40000, 7, 'good.example', [A('good.example', '198.51.100.10')]), T0);
    expect(d.adds.map((a) => a.set)).toEqual(['a4']);
  });

  it('a query expires: its late answer grants nothing', () => {
    const l = new DnsLearner(plan(sets), { pendingTtlMs: 5000 });
    l.query(query(POD_A, 40000, 7, 'good.example'), T0);
    expect(l.answer(answer(POD_A, 40000, 7, 'good.example', [A('good.example', '198.51.100.10')]), T0 + 5000).refused).toBe('unsolicited');
  });

  it('hostile packets and messages are refused with their reason', () => {
    const l = new DnsLearner(plan(sets));
    expect(l.answer(Buffer.from([0x45, 0, 0]), T0).refused).toBe('packet');
    expect(l.answer(udpPacket(DNS, 53, POD_A, 40000, Buffer.from('not dns')), T0).refused).toBe('message');
  });
});

describe('the rule matches the QUERIED name', () => {
  it('a CNAME chain is followed to the addresses, but the name matched is the one queried', () => {
    const l = new DnsLearner(plan([set('shop', POD_A, ['shop.example']), set('cdn', POD_A, ['*.cdn.example'])]));
    l.query(query(POD_A, 40000, 1, 'shop.example'), T0);
    const d = l.answer(
      answer(POD_A, 40000, 1, 'shop.example', [
        { name: 'shop.example', type: 'CNAME', value: 'edge.cdn.example', ttl: 60 },
        A('edge.cdn.example', '198.51.100.20', 3600),
      ]),
      T0,
    );
    // The chain's least TTL (60) bounds the address; `*.cdn.example` does not match `shop.example`.
    expect(d.adds).toEqual([{ set: 'shop', members: [{ member: '198.51.100.20', timeout: 60, comment: '1764000000 shop.example' }] }]);
  });

  it('a wildcard matches one label or more under its suffix, never the suffix itself', () => {
    const l = new DnsLearner(plan([set('w', POD_A, ['*.wild.example'])]));
    l.query(query(POD_A, 1, 1, 'a.b.wild.example'), T0);
    l.query(query(POD_A, 1, 2, 'wild.example'), T0);
    expect(l.answer(answer(POD_A, 1, 1, 'a.b.wild.example', [A('a.b.wild.example', '198.51.100.30')]), T0).adds).toHaveLength(1);
    const bare = l.answer(answer(POD_A, 1, 2, 'wild.example', [A('wild.example', '198.51.100.31')]), T0);
    expect(bare).toMatchObject({ adds: [], unmatched: 1 });
  });

  it('IPv6: an AAAA answer goes to the pod’s inet6 set only', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example']), set('a6', POD_A6, ['good.example'], 6)]));
    l.query(query(POD_A6, 5353, 9, 'good.example', 'AAAA', DNS6), T0);
    const d = l.answer(
      answer(POD_A6, 5353, 9, 'good.example', [{ name: 'good.example', type: 'AAAA', value: '2001:db8::10', ttl: 100000 }], 'AAAA', DNS6),
      T0,
    );
    // TTL past maxTtl (1 day) is capped.
    expect(d.adds).toEqual([{ set: 'a6', members: [{ member: '2001:db8::10', timeout: 86_400, comment: '1764000000 good.example' }] }]);
  });
});

describe('a new plan takes effect at once (setPlan)', () => {
  // A pattern that outlived its plan would be a wrong allow: each sync's plan alone says what matches.
  const grants = (l: DnsLearner, pod: string, id: number, name: string, address: string): readonly string[] => {
    l.query(query(pod, 40000, id, name), T0);
    return l.answer(answer(pod, 40000, id, name, [A(name, address)]), T0).adds.map((a) => a.set);
  };

  it('a changed entry: the old name stops matching, the new one matches', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])]));
    expect(grants(l, POD_A, 1, 'good.example', '198.51.100.50')).toEqual(['a4']);
    l.setPlan(plan([set('a4', POD_A, ['other.example'])]));
    expect(grants(l, POD_A, 2, 'good.example', '198.51.100.51')).toEqual([]);
    expect(grants(l, POD_A, 3, 'other.example', '198.51.100.52')).toEqual(['a4']);
  });

  it('a removed entry stops matching; the entries kept still match', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example', '*.wild.example'])]));
    expect(grants(l, POD_A, 1, 'x.wild.example', '198.51.100.53')).toEqual(['a4']);
    l.setPlan(plan([set('a4', POD_A, ['good.example'])]));
    expect(grants(l, POD_A, 2, 'x.wild.example', '198.51.100.54')).toEqual([]);
    expect(grants(l, POD_A, 3, 'good.example', '198.51.100.55')).toEqual(['a4']);
    // The same plan again (a sync with nothing changed) matches as before.
    l.setPlan(plan([set('a4', POD_A, ['good.example'])]));
    expect(grants(l, POD_A, 4, 'good.example', '198.51.100.56')).toEqual(['a4']);
    expect(grants(l, POD_A, 5, 'x.wild.example', '198.51.100.57')).toEqual([]);
  });

  it('an entry that moves to another pod’s set grants to that set only', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])]));
    l.setPlan(plan([set('a4', POD_A, ['other.example']), set('b4', POD_B, ['good.example'])]));
    expect(grants(l, POD_A, 1, 'good.example', '198.51.100.58')).toEqual([]);
    expect(grants(l, POD_B, 2, 'good.example', '198.51.100.59')).toEqual(['b4']);
  });

  it('a query pending across the new plan is answered under the new plan', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])]));
    l.query(query(POD_A, 40000, 1, 'good.example'), T0);
    l.setPlan(plan([set('a4', POD_A, ['other.example'])]));
    expect(l.answer(answer(POD_A, 40000, 1, 'good.example', [A('good.example', '198.51.100.60')]), T0)).toMatchObject({
      adds: [],
      unmatched: 1,
    });
  });
});

describe('bounds', () => {
  it('pending queries per pod: past the bound a new query is refused (and its answer grants nothing)', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])], { pendingPerPod: 2 }));
    expect(l.query(query(POD_A, 1, 1, 'good.example'), T0)).toBe('recorded');
    expect(l.query(query(POD_A, 1, 2, 'good.example'), T0)).toBe('recorded');
    expect(l.query(query(POD_A, 1, 3, 'good.example'), T0)).toBe('pod-bound');
    expect(l.answer(answer(POD_A, 1, 3, 'good.example', [A('good.example', '198.51.100.1')]), T0).refused).toBe('unsolicited');
  });

  it('an answered query frees its place at once: many lookups in a row all grant under a small per-pod bound', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['*.good.example'])], { pendingPerPod: 2 }));
    for (let i = 0; i < 100; i++) {
      expect(l.query(query(POD_A, 1000 + i, i, `n${i}.good.example`), T0 + i)).toBe('recorded');
      expect(
        l.answer(answer(POD_A, 1000 + i, i, `n${i}.good.example`, [A(`n${i}.good.example`, `198.51.101.${i}`)]), T0 + i).adds,
      ).toHaveLength(1);
    }
    expect(l.pendingQueries).toBe(0);
  });

  it('an answer with the right id but another question does not end the query: the real answer still grants', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])]));
    l.query(query(POD_A, 1, 1, 'good.example'), T0);
    expect(l.answer(answer(POD_A, 1, 1, 'evil.example', [A('evil.example', '203.0.113.1')]), T0).refused).toBe('mismatch');
    expect(l.answer(answer(POD_A, 1, 1, 'good.example', [A('good.example', '198.51.100.1')]), T0).adds).toHaveLength(1);
  });

  it('pending queries per node', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example']), set('b4', POD_B, ['good.example'])]), { pendingPerNode: 1 });
    expect(l.query(query(POD_A, 1, 1, 'good.example'), T0)).toBe('recorded');
    expect(l.query(query(POD_B, 1, 1, 'good.example'), T0)).toBe('node-bound');
  });

  it('learned entries per node: past the bound new addresses are refused, known ones still refreshed, expired ones free their place', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])], { perNodeMax: 2, minTtlSeconds: 0 }));
    const lookup = (id: number, addresses: string[], at: number, ttl = 60) => {
      l.query(query(POD_A, 1, id, 'good.example'), at);
      return l.answer(
        answer(
          POD_A,
          1,
          id,
          'good.example',
          addresses.map((a) => A('good.example', a, ttl)),
        ),
        at,
      );
    };
    expect(lookup(1, ['198.51.100.1', '198.51.100.2'], T0).nodeBound).toBe(0);
    const third = lookup(2, ['198.51.100.1', '198.51.100.3'], T0);
    expect(third.nodeBound).toBe(1);
    expect(third.adds).toEqual([{ set: 'a4', members: [expect.objectContaining({ member: '198.51.100.1' })] }]);
    // After the first two expired (60 s), a new address fits again.
    expect(lookup(3, ['198.51.100.3'], T0 + 61_000)).toMatchObject({ nodeBound: 0, adds: [{ set: 'a4' }] });
  });

  it('a node-local query from a pod no rule selects is not tracked', () => {
    const l = new DnsLearner(plan([set('a4', POD_A, ['good.example'])]));
    expect(l.query(query(POD_B, 1, 1, 'good.example'), T0)).toBe('not-tracked');
  });
});

describe('DNS over TCP', () => {
  const l = (): DnsLearner => new DnsLearner(plan([set('a4', POD_A, ['good.example'])]));
  const q = tcpFramed(dnsMessage({ id: 5, response: false, name: 'good.example', type: 'A' }));
  const r = tcpFramed(
    dnsMessage({ id: 5, response: true, name: 'good.example', type: 'A', answers: [A('good.example', '198.51.100.40')] }),
  );

  it('a query and an answer each split over two segments, read from the streams’ SYNs', () => {
    const agent = l();
    agent.query(tcpPacket(POD_A, 41000, DNS, 53, 1000, { syn: true, ack: false }), T0);
    agent.query(tcpPacket(POD_A, 41000, DNS, 53, 1001, {}, q.subarray(0, 5)), T0);
    expect(agent.query(tcpPacket(POD_A, 41000, DNS, 53, 1006, {}, q.subarray(5)), T0)).toBe('recorded');
    expect(agent.answer(tcpPacket(DNS, 53, POD_A, 41000, 9000, { syn: true }), T0).adds).toEqual([]);
    expect(agent.answer(tcpPacket(DNS, 53, POD_A, 41000, 9001, {}, r.subarray(0, 20)), T0)).toMatchObject({ adds: [] });
    const d = agent.answer(tcpPacket(DNS, 53, POD_A, 41000, 9021, {}, r.subarray(20)), T0);
    expect(d.adds).toEqual([{ set: 'a4', members: [expect.objectContaining({ member: '198.51.100.40' })] }]);
  });

  it('a segment out of sequence, or of a stream whose start was not seen, is read as nothing', () => {
    const agent = l();
    agent.query(tcpPacket(POD_A, 41000, DNS, 53, 1000, { syn: true, ack: false }), T0);
    agent.query(tcpPacket(POD_A, 41000, DNS, 53, 1001, {}, q), T0);
    agent.answer(tcpPacket(DNS, 53, POD_A, 41000, 9000, { syn: true }), T0);
    expect(agent.answer(tcpPacket(DNS, 53, POD_A, 41000, 9500, {}, r), T0)).toMatchObject({ adds: [], refused: 'tcp-stream' });
    expect(agent.answer(tcpPacket(DNS, 53, POD_A, 41999, 1, {}, r), T0)).toMatchObject({ adds: [], refused: 'tcp-stream' });
  });
});
