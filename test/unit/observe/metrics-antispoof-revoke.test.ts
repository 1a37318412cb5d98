// The hardening series as /metrics shows them: anti-spoofing drops by kind and by pod (read from the
// kernel's counters at scrape time), strict-mode passes by family.

import { createMetrics } from '../../../src/observe/metrics.js';
import { SPOOF_READ_INTERVAL_MS, spoofDropSamples } from '../../../src/observe/metrics-antispoof-revoke.js';
import { MAX_DENIED_PODS } from '../../../src/observe/metrics-denied-sync.js';

const lines = async (m: ReturnType<typeof createMetrics>, family: string): Promise<string[]> =>
  (await m.render()).split('\n').filter((l) => l.startsWith(family) && !l.startsWith('#'));
const count = (packets: number) => ({ packets, bytes: packets * 90 });

describe('anti-spoofing drop samples from the bridge table counters', () => {
  it('parses each drop comment, resolves the port to its pod, sums equal labels and skips zeros', () => {
    const counts = new Map([
      ['nf:spoof ipv6 vethA', count(3)],
      ['nf:spoof nd vethA', count(2)],
      ['nf:spoof ipv4 vethB', count(0)],
      ['nf:spoof arp vethGone', count(4)],
      ['nf:spoof unknown-port', count(7)],
      ['nf:spoof ipv4 vethA2', count(1)],
      ['someone else', count(9)],
      ['nf:spoof bogus vethA', count(5)],
    ]);
    const pods: Record<string, { namespace: string; pod: string }> = {
      vethA: { namespace: 'x', pod: 'a' },
      vethA2: { namespace: 'x', pod: 'a' },
      vethB: { namespace: 'x', pod: 'b' },
    };
    expect(spoofDropSamples(counts, (port) => pods[port])).toEqual([
      { kind: 'ipv6', namespace: 'x', pod: 'a', packets: 3 },
      { kind: 'nd', namespace: 'x', pod: 'a', packets: 2 },
      { kind: 'arp', namespace: '', pod: '', packets: 4 },
      { kind: 'unknown-port', namespace: '', pod: '', packets: 7 },
      { kind: 'ipv4', namespace: 'x', pod: 'a', packets: 1 },
    ]);
  });
});

describe('anti-spoofing and strict-mode metrics', () => {
  it('exports no anti-spoofing series while no table is read (anti-spoofing off)', async () => {
    const m = createMetrics();
    expect(await lines(m, 'netfence_spoof_')).toEqual([]);
  });

  it('exports every kind (0 included) and the pods with drops, read at scrape time', async () => {
    let clock = 0;
    const m = createMetrics({ now: () => clock });
    let packets = 3;
    m.setSpoofDropSource(async () => [
      { kind: 'ipv6', namespace: 'x', pod: 'a', packets },
      { kind: 'ipv6', namespace: 'x', pod: 'b', packets: 1 },
      { kind: 'unknown-port', namespace: '', pod: '', packets: 2 },
    ]);
    expect(await lines(m, 'netfence_spoof_drops_total')).toEqual([
      'netfence_spoof_drops_total{kind="ipv4"} 0',
      'netfence_spoof_drops_total{kind="ipv6"} 4',
      'netfence_spoof_drops_total{kind="arp"} 0',
      'netfence_spoof_drops_total{kind="nd"} 0',
      'netfence_spoof_drops_total{kind="router"} 0',
      'netfence_spoof_drops_total{kind="other"} 0',
      'netfence_spoof_drops_total{kind="unknown-port"} 2',
    ]);
    expect(await lines(m, 'netfence_spoof_pod_drops_total')).toEqual([
      'netfence_spoof_pod_drops_total{namespace="x",pod="a",kind="ipv6"} 3',
      'netfence_spoof_pod_drops_total{namespace="x",pod="b",kind="ipv6"} 1',
      'netfence_spoof_pod_drops_total{namespace="",pod="",kind="unknown-port"} 2',
    ]);
    packets = 10;
    clock += SPOOF_READ_INTERVAL_MS;
    expect(await lines(m, 'netfence_spoof_pod_drops_total{namespace="x",pod="a"')).toEqual([
      'netfence_spoof_pod_drops_total{namespace="x",pod="a",kind="ipv6"} 10',
    ]);
  });

  it('reads the table once for a burst of scrapes, and never serves a read older than the interval', async () => {
    let clock = 0;
    let reads = 0;
    const m = createMetrics({ now: () => clock });
    m.setSpoofDropSource(async () => [{ kind: 'ipv4', namespace: 'x', pod: 'a', packets: ++reads }]);
    const ipv4 = async () => (await lines(m, 'netfence_spoof_drops_total{kind="ipv4"}'))[0];
    // 200 scrapes at once, then 200 one after another, all inside one interval: one read.
    await Promise.all(Array.from({ length: 200 }, () => m.render()));
    for (let i = 0; i < 200; i++) await m.render();
    clock += SPOOF_READ_INTERVAL_MS - 1;
    expect(await ipv4()).toBe('netfence_spoof_drops_total{kind="ipv4"} 1');
    expect(reads).toBe(1);
    // Past the interval the next scrape reads again, and sees what the kernel counts now.
    clock += 1;
    expect(await ipv4()).toBe('netfence_spoof_drops_total{kind="ipv4"} 2');
    expect(reads).toBe(2);
  });

  it('keeps the last values when the table cannot be read (a counter never falls to 0 on a failed read)', async () => {
    const m = createMetrics();
    let fail = false;
    m.setSpoofDropSource(async () => {
      if (fail) throw new Error('nft: no such table');
      return [{ kind: 'arp', namespace: 'x', pod: 'a', packets: 5 }];
    });
    expect(await lines(m, 'netfence_spoof_drops_total{kind="arp"}')).toEqual(['netfence_spoof_drops_total{kind="arp"} 5']);
    fail = true;
    expect(await lines(m, 'netfence_spoof_drops_total{kind="arp"}')).toEqual(['netfence_spoof_drops_total{kind="arp"} 5']);
  });

  it(`folds pods past ${MAX_DENIED_PODS} into _other`, async () => {
    const m = createMetrics();
    m.setSpoofDropSource(async () =>
      Array.from({ length: MAX_DENIED_PODS + 2 }, (_, i) => ({ kind: 'ipv4' as const, namespace: 'ns', pod: `p${i}`, packets: 1 })),
    );
    const all = await lines(m, 'netfence_spoof_pod_drops_total');
    expect(all).toHaveLength(MAX_DENIED_PODS + 1);
    expect(all).toContain('netfence_spoof_pod_drops_total{namespace="_other",pod="_other",kind="ipv4"} 2');
  });

  it('counts strict-mode flows marked and unmarked per family, flows carrying the bit, pass duration and failures', async () => {
    const m = createMetrics();
    expect(await lines(m, 'netfence_strict_flows_revoked_total')).toEqual([
      'netfence_strict_flows_revoked_total{family="4"} 0',
      'netfence_strict_flows_revoked_total{family="6"} 0',
    ]);
    m.observeRevokePass(
      [
        { family: 4, revoked: 3, restored: 0, carrying: 3 },
        { family: 6, revoked: 2, restored: 1, carrying: 4 },
      ],
      0.2,
    );
    m.observeRevokePass([{ family: 4, revoked: 0, restored: 3, carrying: 0 }], 0.02);
    m.countRevokePassFailure();
    expect(await lines(m, 'netfence_strict_flows_revoked_total')).toEqual([
      'netfence_strict_flows_revoked_total{family="4"} 3',
      'netfence_strict_flows_revoked_total{family="6"} 2',
    ]);
    expect(await lines(m, 'netfence_strict_flows_restored_total')).toEqual([
      'netfence_strict_flows_restored_total{family="4"} 3',
      'netfence_strict_flows_restored_total{family="6"} 1',
    ]);
    expect(await lines(m, 'netfence_strict_revoked_flows')).toEqual([
      'netfence_strict_revoked_flows{family="4"} 0',
      'netfence_strict_revoked_flows{family="6"} 4',
    ]);
    expect(await lines(m, 'netfence_strict_pass_duration_seconds_count')).toEqual(['netfence_strict_pass_duration_seconds_count 2']);
    expect(await lines(m, 'netfence_strict_pass_duration_seconds_bucket{le="0.025"}')).toEqual([
      'netfence_strict_pass_duration_seconds_bucket{le="0.025"} 1',
    ]);
    expect(await lines(m, 'netfence_strict_pass_failures_total')).toEqual(['netfence_strict_pass_failures_total 1']);
  });
});
