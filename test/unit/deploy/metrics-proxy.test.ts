// The scrape path (deploy/components/metrics-proxy) as a cluster receives it: an overlay of deploy/ with the
// component, rendered by `kubectl kustomize`. The pieces must fit each other (the proxy forwards to where the
// daemon listens, lets only /metrics through, the Service finds the pods, the ServiceMonitor the Service, the
// RBAC binds the pods' account), the Kubernetes kinds must pass their schemas, and every query of the Grafana
// dashboard must name series the daemon really exports, with labels they really carry.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { createMetrics } from '../../../src/observe/metrics.js';
import { schemaProblems } from './k8s-schema.js';

interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name: string; containerPort: number }[];
  securityContext?: Record<string, unknown>;
}
interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  roleRef?: { name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
  rules?: { apiGroups?: string[]; resources?: string[]; nonResourceURLs?: string[]; verbs: string[] }[];
}

const ROOT = process.cwd();
const dir = mkdtempSync(join(tmpdir(), 'netfence-metrics-overlay-'));
// An overlay outside deploy/ (kustomize refuses one inside its base), as docs/operations.md describes it.
writeFileSync(
  join(dir, 'kustomization.yaml'),
  `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ${relative(dir, join(ROOT, 'deploy'))}
components:
  - ${relative(dir, join(ROOT, 'deploy/components/metrics-proxy'))}
`,
);
const docs = parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })).map(
  (d) => d.toJS() as Doc,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const one = (kind: string, name: string): Doc => {
  const found = docs.find((d) => d.kind === kind && d.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name} rendered`);
  return found;
};
const daemonSet = one('DaemonSet', 'netfence');
const template = daemonSet.spec!['template'] as { metadata: Doc['metadata']; spec: { serviceAccountName: string; containers: Container[] } };
const proxy = template.spec.containers.find((c) => c.name === 'kube-rbac-proxy')!;
const arg = (name: string): string[] => (proxy.args ?? []).filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const service = one('Service', 'netfence-metrics');
const serviceSpec = service.spec as { clusterIP: string; selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
const monitor = one('ServiceMonitor', 'netfence');
const monitorSpec = monitor.spec as {
  jobLabel: string;
  namespaceSelector: { matchNames: string[] };
  selector: { matchLabels: Record<string, string> };
  endpoints: { port: string; scheme: string; path: string; bearerTokenFile?: string; relabelings?: { targetLabel: string }[] }[];
};
const subset = (small: Record<string, string>, big: Record<string, string> | undefined) =>
  Object.entries(small).every(([k, v]) => big?.[k] === v);

describe('kubectl kustomize <overlay of deploy/ with components/metrics-proxy>', () => {
  it('adds the proxy sidecar, a headless Service, a ServiceMonitor, the review RBAC, a metrics-reader role and the dashboard', () => {
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual(
      [
        'ClusterRole/netfence',
        'ClusterRole/netfence-metrics-reader',
        'ClusterRole/netfence-request-reviews',
        'ClusterRoleBinding/netfence',
        'ClusterRoleBinding/netfence-request-reviews',
        'ConfigMap/netfence-config',
        'ConfigMap/netfence-grafana-dashboard',
        'DaemonSet/netfence',
        'Service/netfence-metrics',
        'ServiceAccount/netfence',
        'ServiceMonitor/netfence',
      ].sort(),
    );
    expect(template.spec.containers.map((c) => c.name).sort()).toEqual(['kube-rbac-proxy', 'netfence']);
  });

  it('every Kubernetes kind passes its schema (types, required fields, no unknown keys)', () => {
    for (const d of docs.filter((x) => x.kind !== 'ServiceMonitor')) expect(schemaProblems(d as unknown as Record<string, unknown>)).toEqual([]);
  });

  it("the proxy forwards to the daemon's listenAddress on loopback and lets only /metrics through", () => {
    const config = parse(one('ConfigMap', 'netfence-config').data!['config.yaml']!) as { listenAddress: string };
    const [, host, port] = /^(.*):(\d+)$/.exec(config.listenAddress)!;
    expect(host).toBe('127.0.0.1');
    expect(arg('upstream')).toEqual([`http://127.0.0.1:${port}/`]);
    expect(arg('allow-paths')).toEqual(['/metrics']);
  });

  it("listens on the node's address (downward API), on the port the Service targets; TLS", () => {
    const [listen] = arg('secure-listen-address');
    const m = /^\[\$\((\w+)\)\]:(\d+)$/.exec(listen ?? '');
    expect(m).not.toBeNull();
    expect(proxy.env?.find((e) => e.name === m![1])?.valueFrom?.fieldRef?.fieldPath).toBe('status.hostIP');
    const named = proxy.ports!.find((p) => p.containerPort === Number(m![2]))!;
    expect(serviceSpec.ports.map((p) => p.targetPort)).toEqual([named.name]);
    expect(monitorSpec.endpoints[0]).toMatchObject({ port: serviceSpec.ports[0]!.name, scheme: 'https', path: '/metrics' });
  });

  it('the Service finds the netfence pods, the ServiceMonitor finds the Service, each series is labelled with its node', () => {
    expect(serviceSpec.clusterIP).toBe('None');
    expect(subset(serviceSpec.selector, template.metadata.labels)).toBe(true);
    expect(subset(monitorSpec.selector.matchLabels, service.metadata.labels)).toBe(true);
    expect(monitorSpec.namespaceSelector.matchNames).toContain(service.metadata.namespace);
    expect(monitor.metadata.namespace).toBe(service.metadata.namespace);
    expect(monitorSpec.endpoints[0]!.relabelings?.map((r) => r.targetLabel)).toContain('node');
  });

  it("the reviews are granted to the pods' own account; the proxy runs unprivileged; exec and logs still mean the daemon", () => {
    const binding = one('ClusterRoleBinding', 'netfence-request-reviews');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: template.spec.serviceAccountName, namespace: daemonSet.metadata.namespace }]);
    const role = one('ClusterRole', binding.roleRef!.name);
    expect(role.rules!.map((r) => `${r.apiGroups!.join()}/${r.resources!.join()}:${r.verbs.join()}`).sort()).toEqual([
      'authentication.k8s.io/tokenreviews:create',
      'authorization.k8s.io/subjectaccessreviews:create',
    ]);
    expect(one('ClusterRole', 'netfence-metrics-reader').rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    expect(proxy.securityContext).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(template.metadata.annotations?.['kubectl.kubernetes.io/default-container']).toBe('netfence');
    expect(proxy.image).toMatch(/^quay\.io\/brancz\/kube-rbac-proxy:v\d+\.\d+\.\d+$/);
  });
});

describe("the Grafana dashboard's queries", () => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/components/metrics-proxy/grafana-dashboard.json'), 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
    templating: { list: { query?: unknown; definition?: string }[] };
  };
  const queries = [
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: p.title, expr: t.expr }))),
    ...dashboard.templating.list.filter((v) => v.definition).map((v) => ({ where: 'variable', expr: v.definition! })),
  ];

  /** The daemon's own registry, every series the dashboard reads given a sample, rendered as /metrics renders it. */
  async function exported(): Promise<Map<string, Set<string>>> {
    const m = createMetrics({ processMetrics: true });
    m.setReady(true);
    m.setLastSuccessfulSync(1);
    m.observeEventToProgrammed(0.1);
    m.observeSync('incremental', 0.1);
    m.countSyncFailure('apply');
    m.countDriftRepair('chain');
    m.countDenied({ namespace: 'prod', pod: 'db', direction: 'ingress', reason: 'isolated', policy: 'prod/db' });
    m.countAudited({ namespace: 'prod', pod: 'db', direction: 'ingress', policy: 'prod/db' });
    m.setPolicyProblems(new Map([['prod/broken', 1]]));
    m.setBudget({ setMembers: 1, rules: 1, refused: 0 } as Parameters<typeof m.setBudget>[0]);
    m.setProgrammed({ rules: 1, ipsets: 1, ipsetMembers: 1 });
    m.countApiRefusal('watch-list', 'deadline');
    m.countConnectionRefused('total');
    m.countFlowsRequestRefused('forbidden');
    const families = new Map<string, Set<string>>();
    for (const line of (await m.render()).split('\n')) {
      const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
      if (!sample || line.startsWith('#')) continue;
      const labels = [...(sample[2] ?? '').matchAll(/(\w+)="/g)].map((x) => x[1]!);
      const set = families.get(sample[1]!) ?? new Set<string>();
      for (const l of labels) set.add(l);
      families.set(sample[1]!, set);
    }
    return families;
  }

  it('has the main series: readiness, sync latency and failures, drift, denied and audited connections, problems, memory', () => {
    const all = queries.map((q) => q.expr).join('\n');
    for (const name of [
      'netfence_ready',
      'netfence_event_to_programmed_seconds_bucket',
      'netfence_sync_failures_total',
      'netfence_drift_repairs_total',
      'netfence_denied_packets_logged_total',
      'netfence_audit_connections_total',
      'netfence_policy_problems',
      'process_resident_memory_bytes',
    ])
      expect(all).toContain(name);
  });

  it('names only series the daemon exports, and only labels they carry (or the scrape adds)', async () => {
    const families = await exported();
    // Target labels: Prometheus's own, and those the ServiceMonitor's relabelings write.
    const targetLabels = new Set(['job', 'instance', ...(monitorSpec.endpoints[0]!.relabelings ?? []).map((r) => r.targetLabel)]);
    const problems: string[] = [];
    for (const { where, expr } of queries) {
      const names = [...expr.matchAll(/\b((?:netfence|process|nodejs)_\w+)/g)].map((m) => m[1]!);
      expect(names.length).toBeGreaterThan(0);
      const carried = new Set(targetLabels);
      for (const name of names) {
        const labels = families.get(name);
        if (!labels) problems.push(`${where}: ${name} is not exported`);
        for (const l of labels ?? []) carried.add(l);
      }
      const used = [
        ...[...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((s) => s.trim())),
        ...[...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) => [...m[1]!.matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]!)),
        ...(/label_values\(\s*\w+\s*,\s*(\w+)\s*\)/.exec(expr)?.slice(1) ?? []),
      ].filter((l) => l !== '');
      for (const label of used) if (!carried.has(label)) problems.push(`${where}: label ${label} is on none of ${names.join(', ')}`);
    }
    expect(problems).toEqual([]);
  });

  it('a misspelt series would be caught: the check is not vacuous', async () => {
    const families = await exported();
    expect(families.has('netfence_denied_connections_total')).toBe(false);
    expect(families.get('netfence_denied_packets_logged_total')).toEqual(new Set(['namespace', 'pod', 'direction', 'reason', 'policy']));
  });
});
