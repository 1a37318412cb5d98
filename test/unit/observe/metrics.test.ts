import { createMetrics } from '../../../src/observe/metrics.js';

/** The sample lines (no HELP/TYPE) of one metric family. */
async function samples(render: () => Promise<string>, family: string): Promise<string[]> {
  const text = await render();
  return text.split('\n').filter((line) => line.startsWith(family) && !line.startsWith('#'));
}

describe('createMetrics', () => {
  it('declares every metric with HELP and TYPE', async () => {
    const text = await createMetrics().render();
    const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => `${name} ${type}`);
    expect(declared.sort()).toEqual(
      [
        'netfence_api_responses_refused_total counter',
        'netfence_apply_duration_seconds histogram',
        'netfence_apply_failures_total counter',
        'netfence_audit_connections_total counter',
        'netfence_budget_used gauge',
        'netfence_build_info gauge',
        'netfence_denied_packets_logged_total counter',
        'netfence_dns_addresses_learned_total counter',
        'netfence_dns_answers_refused_total counter',
        'netfence_dns_answers_total counter',
        'netfence_dns_bound_refusals_total counter',
        'netfence_dns_hold_seconds histogram',
        'netfence_dns_learned_entries gauge',
        'netfence_dns_released_on_error_total counter',
        'netfence_drift_repairs_total counter',
        'netfence_event_to_programmed_seconds histogram',
        'netfence_flow_log_reader_errors_total counter',
        'netfence_flow_log_explain_errors_total counter',
        'netfence_last_successful_sync_timestamp_seconds gauge',
        'netfence_tool_failures_total counter',
        'netfence_tool_invocations_total counter',
        'netfence_events_total counter',
        'netfence_hook_displaced_total counter',
        'netfence_http_connections_refused_total counter',
        'netfence_flows_requests_refused_total counter',
        'netfence_ipset_members_programmed gauge',
        'netfence_ipset_netlink_writes_total counter',
        'netfence_ipset_writer gauge',
        'netfence_ipsets_programmed gauge',
        'netfence_kube_proxy_ipvs gauge',
        'netfence_kernel_precondition gauge',
        'netfence_policies_over_budget gauge',
        'netfence_policy_event_reports_total counter',
        'netfence_policy_problems gauge',
        'netfence_ready gauge',
        'netfence_rules_programmed gauge',
        'netfence_source_incomplete gauge',
        'netfence_sync_duration_seconds histogram',
        'netfence_sync_failures_total counter',
        'netfence_spoof_drops_total counter',
        'netfence_spoof_pod_drops_total counter',
        'netfence_strict_flows_restored_total counter',
        'netfence_strict_flows_revoked_total counter',
        'netfence_strict_pass_duration_seconds histogram',
        'netfence_strict_pass_failures_total counter',
        'netfence_strict_revoked_flows gauge',
      ].sort(),
    );
    expect(text).toMatch(/^# HELP netfence_ready \S/m);
  });

  it.each<{ name: string; act: (m: ReturnType<typeof createMetrics>) => void; family: string; expect: string[] }>([
    {
      name: 'events counted by kind',
      act: (m) => {
        m.countEvent('pod');
        m.countEvent('pod', 2);
        m.countEvent('networkpolicy');
      },
      family: 'netfence_events_total',
      expect: ['netfence_events_total{kind="pod"} 3', 'netfence_events_total{kind="networkpolicy"} 1'],
    },
    {
      name: 'programmed gauges',
      act: (m) => m.setProgrammed({ rules: 120, ipsets: 7, ipsetMembers: 4000 }),
      family: 'netfence_ipset',
      expect: ['netfence_ipsets_programmed 7', 'netfence_ipset_members_programmed 4000', 'netfence_ipset_netlink_writes_total 0'],
    },
    {
      name: 'ipset writer mode: netlink, then restore after a fallback; netlink writes counted',
      act: (m) => {
        m.setIpsetWriter('netlink');
        m.countIpsetNetlinkWrite();
        m.countIpsetNetlinkWrite();
        m.setIpsetWriter('restore');
      },
      family: 'netfence_ipset_',
      expect: [
        'netfence_ipset_members_programmed 0',
        'netfence_ipset_writer{mode="netlink"} 0',
        'netfence_ipset_writer{mode="restore"} 1',
        'netfence_ipset_netlink_writes_total 2',
      ],
    },
    {
      name: 'rules gauge',
      act: (m) => m.setProgrammed({ rules: 120, ipsets: 7, ipsetMembers: 4000 }),
      family: 'netfence_rules_programmed',
      expect: ['netfence_rules_programmed 120'],
    },
    {
      name: 'drift repairs pre-created at zero, then counted',
      act: (m) => m.countDriftRepair('hook'),
      family: 'netfence_drift_repairs_total',
      expect: [
        'netfence_drift_repairs_total{object="chain"} 0',
        'netfence_drift_repairs_total{object="set"} 0',
        'netfence_drift_repairs_total{object="hook"} 1',
      ],
    },
    {
      name: 'hook displacements pre-created at zero for FORWARD, then counted',
      act: (m) => m.countHookDisplaced('FORWARD'),
      family: 'netfence_hook_displaced_total',
      expect: ['netfence_hook_displaced_total{chain="FORWARD"} 1'],
    },
    {
      name: 'IPVS mode detected',
      act: (m) => m.setIpvsDetected(true),
      family: 'netfence_kube_proxy_ipvs',
      expect: ['netfence_kube_proxy_ipvs 1'],
    },
    {
      name: 'apply failures',
      act: (m) => {
        m.countApplyFailure();
        m.countApplyFailure();
      },
      family: 'netfence_apply_failures_total',
      expect: ['netfence_apply_failures_total 2'],
    },
    {
      name: 'policy problems are replaced, not accumulated',
      act: (m) => {
        m.setPolicyProblems(
          new Map([
            ['prod/old', 1],
            ['prod/db', 2],
          ]),
        );
        m.setPolicyProblems(new Map([['prod/db', 1]]));
      },
      family: 'netfence_policy_problems',
      expect: ['netfence_policy_problems{policy="prod/db"} 1'],
    },
    {
      name: 'the node budget: use by resource',
      act: (m) => m.setBudget({ setMembers: 20_002, rules: 3, refused: 1 }),
      family: 'netfence_budget_used',
      expect: ['netfence_budget_used{resource="set-members"} 20002', 'netfence_budget_used{resource="rules"} 3'],
    },
    {
      name: 'the node budget: policies it refused',
      act: (m) => m.setBudget({ setMembers: 20_002, rules: 3, refused: 1 }),
      family: 'netfence_policies_over_budget',
      expect: ['netfence_policies_over_budget 1'],
    },
    {
      name: 'ready flips',
      act: (m) => m.setReady(true),
      family: 'netfence_ready',
      expect: ['netfence_ready 1'],
    },
    {
      name: 'apply histogram buckets are cumulative',
      act: (m) => {
        m.observeApply(0.003);
        m.observeApply(0.2);
      },
      family: 'netfence_apply_duration_seconds_',
      expect: expect.arrayContaining([
        'netfence_apply_duration_seconds_bucket{le="0.0025"} 0',
        'netfence_apply_duration_seconds_bucket{le="0.005"} 1',
        'netfence_apply_duration_seconds_bucket{le="0.25"} 2',
        'netfence_apply_duration_seconds_bucket{le="+Inf"} 2',
        'netfence_apply_duration_seconds_sum 0.203',
        'netfence_apply_duration_seconds_count 2',
      ]) as unknown as string[],
    },
    {
      name: 'sync histogram labelled by kind',
      act: (m) => m.observeSync('full', 1.5),
      family: 'netfence_sync_duration_seconds_count',
      expect: ['netfence_sync_duration_seconds_count{kind="full"} 1', 'netfence_sync_duration_seconds_count{kind="incremental"} 0'],
    },
  ])('$name', async ({ act, family, expect: expected }) => {
    const metrics = createMetrics();
    act(metrics);
    expect(await samples(metrics.render, family)).toEqual(expected);
  });

  it('starts not ready', async () => {
    expect(await samples(createMetrics().render, 'netfence_ready')).toEqual(['netfence_ready 0']);
  });

  it('keeps instances apart (no global registry)', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.countApplyFailure();
    expect(await samples(b.render, 'netfence_apply_failures_total')).toEqual(['netfence_apply_failures_total 0']);
  });

  it('adds process metrics on request', async () => {
    expect(await createMetrics({ processMetrics: true }).render()).toMatch(/^process_cpu_seconds_total /m);
    expect(await createMetrics().render()).not.toMatch(/^process_/m);
  });

  it('uses the Prometheus text content type', () => {
    expect(createMetrics().contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });
});
