// The DNS agent's wiring, with a socket played by the test: every answer is released exactly once, granted or
// not; a write that misses the deadline or fails is counted as released on error, a full set as a bound; answers
// that arrive before the socket is handed back are not lost; no learned set, no socket; what the kernel's sets
// already hold (from before a restart) counts against the per-node bound before anything new is granted.

import { createDnsEgress } from '../../../src/daemon/dns-egress.js';
import type { DnsSocket, DnsSocketOptions, GrantOutcome } from '../../../src/dataplane/dns-socket.js';
import { nullLogger } from '../../../src/log.js';
import { defaultDnsLearningSettings, type DnsLearningPlan } from '../../../src/model/dns-egress.js';
import { createMetrics } from '../../../src/observe/metrics.js';
import { metricValue } from '../../helpers/daemon-harness.js';
import { dnsMessage, udpPacket } from '../../helpers/dns-message.js';

const POD = '10.0.1.2';
const DNS = '10.0.9.9';
const PLAN: DnsLearningPlan = {
  settings: defaultDnsLearningSettings,
  sets: [{ setName: 'a4', family: 4, pod: 'x/a', podAddress: POD, policy: 'p', ruleIndex: 0, domainNames: ['good.example'] }],
};
const query = (id: number): Buffer => udpPacket(POD, 4000, DNS, 53, dnsMessage({ id, response: false, name: 'good.example', type: 'A' }));
const answerWith = (id: number, values: string[]): Buffer =>
  udpPacket(
    DNS,
    53,
    POD,
    4000,
    dnsMessage({
      id,
      response: true,
      name: 'good.example',
      type: 'A',
      answers: values.map((value) => ({ name: 'good.example', type: 'A' as const, value, ttl: 60 })),
    }),
  );
const answer = (id: number): Buffer => answerWith(id, ['198.51.100.1']);

function fakeSocket(outcome: GrantOutcome, early: [number, Buffer][] = []) {
  const released: number[] = [];
  const granted: number[] = [];
  const written: string[] = [];
  let opts: DnsSocketOptions | undefined;
  let opened = 0;
  const open = async (o: DnsSocketOptions): Promise<DnsSocket> => {
    opts = o;
    opened++;
    // Packets the kernel delivers right after the bind, before open() resolves.
    for (const [id, packet] of early) o.onAnswer(id, packet);
    return {
      grant: async (id, changes) => {
        granted.push(id);
        for (const c of changes) for (const m of c.members) written.push(`${c.set} ${typeof m === 'string' ? m : m.member}`);
        released.push(id);
        return outcome;
      },
      release: (id) => void released.push(id),
      close: async () => undefined,
    };
  };
  return { open, released, granted, written, opts: () => opts!, opened: () => opened };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('the DNS agent in the daemon', () => {
  it('a granted answer is written then released once; an unsolicited one is released at once and counted', async () => {
    const metrics = createMetrics();
    const s = fakeSocket({ ok: true });
    const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics, open: s.open });
    await agent.follow(PLAN);
    s.opts().onQuery(query(1));
    s.opts().onAnswer(10, answer(1));
    s.opts().onAnswer(11, answer(2));
    await tick();
    expect(s.granted).toEqual([10]);
    expect(s.released.sort()).toEqual([10, 11]);
    const text = await metrics.render();
    expect(metricValue(text, 'netfence_dns_answers_total')).toBe(2);
    expect(metricValue(text, 'netfence_dns_addresses_learned_total')).toBe(1);
    expect(metricValue(text, 'netfence_dns_answers_refused_total{reason="unsolicited"}')).toBe(1);
  });

  it.each([
    [{ ok: false, kind: 'deadline', message: 'late' } as const, 'netfence_dns_released_on_error_total{kind="deadline"}'],
    [{ ok: false, kind: 'error', message: 'EPERM' } as const, 'netfence_dns_released_on_error_total{kind="error"}'],
    [{ ok: false, kind: 'full', message: 'full' } as const, 'netfence_dns_bound_refusals_total{bound="set-full"}'],
  ])('a write that ends %j: released, counted, nothing counted as learned', async (outcome, series) => {
    const metrics = createMetrics();
    const s = fakeSocket(outcome);
    const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics, open: s.open });
    await agent.follow(PLAN);
    s.opts().onQuery(query(1));
    s.opts().onAnswer(10, answer(1));
    await tick();
    expect(s.released).toEqual([10]);
    const text = await metrics.render();
    expect(metricValue(text, series)).toBe(1);
    expect(metricValue(text, 'netfence_dns_addresses_learned_total')).toBe(0);
  });

  it('answers delivered before the socket is handed back are still released', async () => {
    const s = fakeSocket({ ok: true }, [[7, answer(9)]]);
    const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics: createMetrics(), open: s.open });
    await agent.follow(PLAN);
    await tick();
    expect(s.released).toEqual([7]);
  });

  it('no learned set: no socket; the last set gone: the socket closed, opened again for a new plan', async () => {
    const s = fakeSocket({ ok: true });
    const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics: createMetrics(), open: s.open });
    await agent.follow({ settings: defaultDnsLearningSettings, sets: [] });
    expect(s.opened()).toBe(0);
    await agent.follow(PLAN);
    await agent.follow(undefined);
    await agent.follow(PLAN);
    expect(s.opened()).toBe(2);
    await agent.stop();
  });

  describe('what the learned sets already hold counts against the node bound (a restart does not reset it)', () => {
    const saved = [
      'create a4 hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment bucketsize 12 initval 0x1',
      'add a4 198.51.100.1 timeout 100 comment "1764000000 good.example"',
      'add a4 198.51.100.2 timeout 100 comment "1764000000 good.example"',
      'create other hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x2',
      'add other 10.9.9.9',
    ].join('\n');
    const bounded: DnsLearningPlan = { ...PLAN, settings: { ...PLAN.settings, perNodeMax: 3 } };

    it('read back at start: a refresh of a held address is granted, one new address fills the bound, the next is refused (counted)', async () => {
      const metrics = createMetrics();
      const s = fakeSocket({ ok: true });
      let reads = 0;
      const readSets = async (): Promise<string> => (reads++, saved);
      const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics, open: s.open, readSets });
      await agent.follow(bounded);
      expect(metricValue(await metrics.render(), 'netfence_dns_learned_entries')).toBe(2);
      s.opts().onQuery(query(1));
      s.opts().onAnswer(10, answerWith(1, ['198.51.100.1', '198.51.100.3', '198.51.100.4']));
      await tick();
      expect(s.written).toEqual(['a4 198.51.100.1', 'a4 198.51.100.3']);
      const text = await metrics.render();
      expect(metricValue(text, 'netfence_dns_bound_refusals_total{bound="learned-node"}')).toBe(1);
      expect(metricValue(text, 'netfence_dns_learned_entries')).toBe(3);
      // Followed since: the next plans read nothing again.
      await agent.follow(bounded);
      expect(reads).toBe(1);
    });

    it('a set the sync just created is empty: not read; a followed set the sync recreated no longer counts', async () => {
      const metrics = createMetrics();
      const s = fakeSocket({ ok: true });
      let reads = 0;
      const readSets = async (): Promise<string> => (reads++, saved);
      const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics, open: s.open, readSets });
      await agent.follow(bounded, new Set(['a4']));
      expect(reads).toBe(0);
      s.opts().onQuery(query(1));
      s.opts().onAnswer(10, answerWith(1, ['198.51.100.5', '198.51.100.6', '198.51.100.7']));
      await tick();
      expect(metricValue(await metrics.render(), 'netfence_dns_learned_entries')).toBe(3);
      await agent.follow(bounded, new Set(['a4']));
      expect(metricValue(await metrics.render(), 'netfence_dns_learned_entries')).toBe(0);
    });

    it('a read that fails counts nothing yet and is tried again with the next plan', async () => {
      const metrics = createMetrics();
      const s = fakeSocket({ ok: true });
      let reads = 0;
      const readSets = async (): Promise<string> => {
        if (reads++ === 0) throw new Error('ipset: timed out');
        return saved;
      };
      const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics, open: s.open, readSets });
      await agent.follow(bounded);
      expect(metricValue(await metrics.render(), 'netfence_dns_learned_entries')).toBe(0);
      await agent.follow(bounded);
      expect(reads).toBe(2);
      expect(metricValue(await metrics.render(), 'netfence_dns_learned_entries')).toBe(2);
    });
  });
});
