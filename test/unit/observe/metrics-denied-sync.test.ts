// The operator-facing series as /metrics shows them: names and labels, the bound on denied-connection pods,
// pruning of pods that left, tool runs and failures, build info.

import { createMetrics } from '../../../src/observe/metrics.js';
import { MAX_DENIED_POLICIES, MAX_DENIED_PODS } from '../../../src/observe/metrics-denied-sync.js';

const lines = async (m: ReturnType<typeof createMetrics>, family: string): Promise<string[]> =>
  (await m.render()).split('\n').filter((l) => l.startsWith(family) && !l.startsWith('#'));

describe('visibility metrics', () => {
  it('counts logged denied packets by pod, direction, reason and policy', async () => {
    const m = createMetrics();
    m.countDenied({ namespace: 'prod', pod: 'db', direction: 'ingress', reason: 'isolated', policy: 'prod/db' });
    m.countDenied({ namespace: 'prod', pod: 'db', direction: 'ingress', reason: 'isolated', policy: 'prod/db' });
    m.countDenied({ namespace: '', pod: '', direction: 'egress', reason: 'unknown-pod', policy: '' });
    expect(await lines(m, 'netfence_denied_packets_logged_total')).toEqual([
      'netfence_denied_packets_logged_total{namespace="prod",pod="db",direction="ingress",reason="isolated",policy="prod/db"} 2',
      'netfence_denied_packets_logged_total{namespace="",pod="",direction="egress",reason="unknown-pod",policy=""} 1',
    ]);
  });

  it(`folds pods past ${MAX_DENIED_PODS} into _other, and drops pods that left the node`, async () => {
    const m = createMetrics();
    for (let i = 0; i <= MAX_DENIED_PODS; i++)
      m.countDenied({ namespace: 'ns', pod: `p${i}`, direction: 'ingress', reason: 'isolated', policy: 'prod/db' });
    const all = await lines(m, 'netfence_denied_packets_logged_total');
    expect(all).toHaveLength(MAX_DENIED_PODS + 1);
    expect(all).toContain(
      'netfence_denied_packets_logged_total{namespace="_other",pod="_other",direction="ingress",reason="isolated",policy="prod/db"} 1',
    );
    m.keepDeniedPods(new Set(['ns/p0']));
    expect(await lines(m, 'netfence_denied_packets_logged_total')).toEqual([
      'netfence_denied_packets_logged_total{namespace="ns",pod="p0",direction="ingress",reason="isolated",policy="prod/db"} 1',
      'netfence_denied_packets_logged_total{namespace="_other",pod="_other",direction="ingress",reason="isolated",policy="prod/db"} 1',
    ]);
    // Room again for a new pod once others left.
    m.countDenied({ namespace: 'ns', pod: 'new', direction: 'egress', reason: 'invalid-policy', policy: 'ns/broken' });
    expect(await lines(m, 'netfence_denied_packets_logged_total{namespace="ns",pod="new"')).toHaveLength(1);
  });

  it('asks for the live pods only when some series names a pod, and prunes by them then', async () => {
    const m = createMetrics();
    let asked = 0;
    const live = () => (asked++, new Set(['ns/kept']));
    m.countDenied({ namespace: '', pod: '', direction: 'egress', reason: 'unknown-pod', policy: '' });
    m.keepDeniedPods(live);
    expect(asked).toBe(0);
    m.countDenied({ namespace: 'ns', pod: 'kept', direction: 'ingress', reason: 'isolated', policy: 'ns/p' });
    m.countDenied({ namespace: 'ns', pod: 'gone', direction: 'ingress', reason: 'isolated', policy: 'ns/p' });
    m.keepDeniedPods(live);
    expect(asked).toBe(1);
    expect(await lines(m, 'netfence_denied_packets_logged_total{namespace="ns"')).toEqual([
      'netfence_denied_packets_logged_total{namespace="ns",pod="kept",direction="ingress",reason="isolated",policy="ns/p"} 1',
    ]);
  });

  it('counts what is programmed when /metrics is read, from the last state given', async () => {
    const m = createMetrics();
    let counted = 0;
    m.setProgrammed(() => (counted++, { rules: 3, ipsets: 2, ipsetMembers: 9 }));
    m.setProgrammed(() => (counted++, { rules: 120, ipsets: 7, ipsetMembers: 4000 }));
    expect(counted).toBe(0);
    expect(await lines(m, 'netfence_rules_programmed')).toEqual(['netfence_rules_programmed 120']);
    expect(await lines(m, 'netfence_ipset_members_programmed')).toEqual(['netfence_ipset_members_programmed 4000']);
    expect(counted).toBe(1);
  });

  it(`folds policies past ${MAX_DENIED_POLICIES} into policy="_other" (the label's bound)`, async () => {
    const m = createMetrics();
    for (let i = 0; i <= MAX_DENIED_POLICIES; i++)
      m.countDenied({ namespace: 'ns', pod: 'p', direction: 'ingress', reason: 'isolated', policy: `ns/pol-${i}` });
    const all = await lines(m, 'netfence_denied_packets_logged_total');
    expect(all).toHaveLength(MAX_DENIED_POLICIES + 1);
    expect(all).toContain(
      'netfence_denied_packets_logged_total{namespace="ns",pod="p",direction="ingress",reason="isolated",policy="_other"} 1',
    );
    // A policy already counted keeps its own series.
    m.countDenied({ namespace: 'ns', pod: 'p', direction: 'ingress', reason: 'isolated', policy: 'ns/pol-0' });
    expect(
      await lines(
        m,
        'netfence_denied_packets_logged_total{namespace="ns",pod="p",direction="ingress",reason="isolated",policy="ns/pol-0"}',
      ),
    ).toEqual(['netfence_denied_packets_logged_total{namespace="ns",pod="p",direction="ingress",reason="isolated",policy="ns/pol-0"} 2']);
  });

  it('tool runs and failures per tool, the last sync time, latency and build info', async () => {
    const m = createMetrics();
    m.countToolRun('iptables-restore', true);
    m.countToolRun('iptables-restore', false);
    m.countToolRun('ipset', true);
    m.setLastSuccessfulSync(1700000000.5);
    m.observeEventToProgrammed(0.03);
    expect(await lines(m, 'netfence_tool_invocations_total')).toEqual([
      'netfence_tool_invocations_total{tool="iptables-restore"} 2',
      'netfence_tool_invocations_total{tool="ipset"} 1',
    ]);
    expect(await lines(m, 'netfence_tool_failures_total')).toEqual(['netfence_tool_failures_total{tool="iptables-restore"} 1']);
    expect(await lines(m, 'netfence_last_successful_sync_timestamp_seconds')).toEqual([
      'netfence_last_successful_sync_timestamp_seconds 1700000000.5',
    ]);
    expect(await lines(m, 'netfence_event_to_programmed_seconds_bucket{le="0.05"}')).toEqual([
      'netfence_event_to_programmed_seconds_bucket{le="0.05"} 1',
    ]);
    expect(await lines(m, 'netfence_build_info')).toEqual([`netfence_build_info{version="0.1.0",nodejs="${process.versions.node}"} 1`]);
  });
});
