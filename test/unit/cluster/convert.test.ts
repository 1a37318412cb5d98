import { convert, type Converted } from '../../../src/cluster/convert.js';
import type { NetworkPolicy, Pod, Problem } from '../../../src/model/index.js';

const policy = (spec: unknown, meta: Record<string, unknown> = {}) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'np', namespace: 'prod', ...meta },
  spec,
});

const pod = (extra: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'prod', labels: { app: 'web' }, ...meta },
  ...extra,
});

const problemsOf = (r: Converted<unknown>) => r.problems.map((p: Problem) => `${p.object} | ${p.field} | ${p.message}`);

function okValue<T>(r: Converted<T>): T {
  if (!r.ok) throw new Error(`expected ok, got ${problemsOf(r).join('; ')}`);
  return r.value;
}

describe('convert NetworkPolicy: shape errors', () => {
  interface Case {
    readonly name: string;
    readonly spec: unknown;
    readonly problems: readonly string[];
  }
  it.each<Case>([
    {
      name: 'valid policy has no problems',
      spec: { podSelector: {}, ingress: [{ ports: [{ port: 80 }, { port: 'http' }] }] },
      problems: [],
    },
    {
      name: 'port of wrong type',
      spec: { podSelector: {}, ingress: [{ ports: [{ port: 80 }, { port: true }] }] },
      problems: ['NetworkPolicy prod/np | spec.ingress[0].ports[1].port | must be integer or string (got boolean true)'],
    },
    {
      name: 'unknown protocol',
      spec: { podSelector: {}, egress: [{ ports: [{ protocol: 'ICMP', port: 1 }] }] },
      problems: ['NetworkPolicy prod/np | spec.egress[0].ports[0].protocol | must be one of TCP, UDP, SCTP (got "ICMP")'],
    },
    {
      name: 'fractional endPort',
      spec: { podSelector: {}, ingress: [{ ports: [{ port: 80, endPort: 90.5 }] }] },
      problems: ['NetworkPolicy prod/np | spec.ingress[0].ports[0].endPort | must be integer (got number 90.5)'],
    },
    {
      name: 'bad selector operator',
      spec: { podSelector: { matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }] } },
      problems: [
        'NetworkPolicy prod/np | spec.podSelector.matchExpressions[0].operator | must be one of In, NotIn, Exists, DoesNotExist (got "Equals")',
      ],
    },
    {
      name: 'ipBlock without cidr',
      spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { except: ['10.0.0.0/8'] } }] }] },
      problems: ['NetworkPolicy prod/np | spec.ingress[0].from[0].ipBlock.cidr | required field "cidr" is missing'],
    },
    {
      name: 'non-string label value with dotted key',
      spec: { podSelector: { matchLabels: { 'app.kubernetes.io/name': 3 } } },
      problems: ['NetworkPolicy prod/np | spec.podSelector.matchLabels["app.kubernetes.io/name"] | must be string (got number 3)'],
    },
    {
      name: 'several errors are all reported',
      spec: { podSelector: {}, policyTypes: ['Ingress', 'Sideways'], ingress: 'all' },
      problems: [
        'NetworkPolicy prod/np | spec.policyTypes[1] | must be one of Ingress, Egress (got "Sideways")',
        'NetworkPolicy prod/np | spec.ingress | must be array (got "all")',
      ],
    },
    { name: 'null optional fields are unset', spec: { podSelector: {}, ingress: null, egress: [{ to: null, ports: null }] }, problems: [] },
    { name: 'unknown fields are ignored', spec: { podSelector: {}, somethingNew: 1, ingress: [{ extra: true }] }, problems: [] },
  ])('$name', ({ spec, problems }) => {
    const r = convert('NetworkPolicy', policy(spec));
    const value = okValue(r);
    expect(problemsOf(r)).toEqual(problems);
    expect(value.problems ?? []).toEqual(r.problems);
  });
});

describe('convert NetworkPolicy: reading', () => {
  interface Case {
    readonly name: string;
    readonly spec: unknown;
    readonly expected: Partial<NetworkPolicy>;
  }
  it.each<Case>([
    {
      name: 'protocol defaults to TCP, named and numeric ports kept',
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ ports: [{ port: 5432 }, { protocol: 'UDP', port: 'dns', endPort: undefined }] }],
      },
      expected: {
        podSelector: { matchLabels: { app: 'db' }, matchExpressions: [] },
        ingress: [
          {
            ports: [
              { protocol: 'TCP', port: 5432 },
              { protocol: 'UDP', port: 'dns' },
            ],
          },
        ],
      },
    },
    {
      name: 'policyTypes absent stays absent',
      spec: { podSelector: {} },
      expected: { podSelector: { matchLabels: {}, matchExpressions: [] } },
    },
    { name: 'policyTypes kept as written', spec: { podSelector: {}, policyTypes: ['Egress'] }, expected: { policyTypes: ['Egress'] } },
    {
      name: 'unreadable policyTypes isolate both directions',
      spec: { podSelector: {}, policyTypes: 'Egress' },
      expected: { policyTypes: ['Ingress', 'Egress'] },
    },
    {
      name: 'unreadable egress list still counts as an egress section',
      spec: { podSelector: {}, egress: { to: [] } },
      expected: { egress: [{}] },
    },
    {
      name: 'unreadable podSelector reads as empty (whole namespace)',
      spec: { podSelector: 'app=web' },
      expected: { podSelector: { matchLabels: {}, matchExpressions: [] } },
    },
    {
      name: 'peers: selectors and ipBlock',
      spec: {
        podSelector: {},
        egress: [
          {
            to: [
              { namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a', 'b'] }] }, podSelector: {} },
              { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } },
            ],
          },
        ],
      },
      expected: {
        egress: [
          {
            peers: [
              {
                podSelector: { matchLabels: {}, matchExpressions: [] },
                namespaceSelector: { matchLabels: {}, matchExpressions: [{ key: 'team', operator: 'In', values: ['a', 'b'] }] },
              },
              { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } },
            ],
          },
        ],
      },
    },
  ])('$name', ({ spec, expected }) => {
    expect(okValue(convert('NetworkPolicy', policy(spec)))).toMatchObject(expected);
  });

  it('a policy without spec is still returned, selecting the whole namespace', () => {
    const r = convert('NetworkPolicy', { metadata: { name: 'np', namespace: 'a' } });
    expect(okValue(r)).toEqual({ namespace: 'a', name: 'np', podSelector: { matchLabels: {}, matchExpressions: [] } });
  });

  it('a policy without a name cannot be keyed and is rejected', () => {
    const r = convert('NetworkPolicy', { metadata: { namespace: 'a' }, spec: {} });
    expect(r.ok).toBe(false);
    expect(problemsOf(r)).toEqual(['NetworkPolicy a/<unnamed> | metadata.name | required field "name" is missing']);
  });
});

describe('convert Pod', () => {
  interface Case {
    readonly name: string;
    readonly obj: unknown;
    readonly expected: Partial<Pod>;
  }
  it.each<Case>([
    {
      // Only a named port can matter to a policy ("named port ... resolved per destination pod"): unnamed ones are not kept.
      name: 'podIPs, phase, node, named ports (protocol defaults to TCP; unnamed ports are not kept)',
      obj: pod({
        spec: {
          nodeName: 'n1',
          containers: [
            {
              name: 'a',
              ports: [{ name: 'http', containerPort: 8080 }, { containerPort: 9000 }, { name: 'dns', containerPort: 53, protocol: 'UDP' }],
            },
            { name: 'b' },
          ],
        },
        status: { phase: 'Running', podIP: '10.0.0.5', podIPs: [{ ip: '10.0.0.5' }, { ip: 'fd00:0::0005' }] },
      }),
      expected: {
        namespace: 'prod',
        name: 'web',
        labels: { app: 'web' },
        nodeName: 'n1',
        hostNetwork: false,
        phase: 'Running',
        ips: ['10.0.0.5', 'fd00::5'],
        ports: [
          { name: 'http', containerPort: 8080, protocol: 'TCP' },
          { name: 'dns', containerPort: 53, protocol: 'UDP' },
        ],
      },
    },
    { name: 'podIP alone', obj: pod({ status: { podIP: '10.0.0.6' } }), expected: { ips: ['10.0.0.6'], phase: 'Pending' } },
    { name: 'no status: no IPs, unscheduled', obj: pod(), expected: { ips: [], nodeName: '', phase: 'Pending' } },
    { name: 'hostNetwork', obj: pod({ spec: { hostNetwork: true } }), expected: { hostNetwork: true } },
    { name: 'namespace defaults to default', obj: pod({}, { namespace: undefined }), expected: { namespace: 'default' } },
  ])('$name', ({ obj, expected }) => {
    expect(okValue(convert('Pod', obj))).toMatchObject(expected);
  });

  it.each([
    {
      name: 'containerPort as string',
      obj: pod({ spec: { containers: [{ ports: [{ containerPort: '80' }] }] } }),
      field: 'spec.containers[0].ports[0].containerPort',
    },
    { name: 'unknown phase', obj: pod({ status: { phase: 'Exploded' } }), field: 'status.phase' },
    { name: 'label value not a string', obj: pod({}, { labels: { v: 1 } }), field: 'metadata.labels.v' },
    { name: 'no metadata', obj: { kind: 'Pod' }, field: 'metadata' },
  ])('rejects a pod with $name', ({ obj, field }) => {
    const r = convert('Pod', obj);
    expect(r.ok).toBe(false);
    expect(r.problems.map((p) => p.field)).toEqual([field]);
  });

  it('ignores (with a warning) an IP that is not one', () => {
    const r = convert('Pod', pod({ status: { podIPs: [{ ip: 'banana' }, { ip: '10.0.0.1' }] } }));
    expect(okValue(r).ips).toEqual(['10.0.0.1']);
    expect(r.problems).toEqual([
      { object: 'Pod prod/web', field: 'status.podIPs[0].ip', message: '"banana" is not an IP address; ignored', severity: 'warning' },
    ]);
  });
});

describe('convert Namespace and Node', () => {
  it('adds kubernetes.io/metadata.name to a namespace', () => {
    const r = convert('Namespace', { metadata: { name: 'prod', labels: { team: 'a' } } });
    expect(okValue(r)).toEqual({ name: 'prod', labels: { team: 'a', 'kubernetes.io/metadata.name': 'prod' } });
  });

  it.each([
    {
      name: 'podCIDRs and internal/external addresses',
      obj: {
        metadata: { name: 'n1' },
        spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:1::/64'] },
        status: {
          addresses: [
            { type: 'Hostname', address: 'n1' },
            { type: 'InternalIP', address: '192.168.0.10' },
            { type: 'ExternalIP', address: '203.0.113.7' },
          ],
        },
      },
      expected: { name: 'n1', podCidrs: ['10.244.1.0/24', 'fd00:1::/64'], addresses: ['192.168.0.10', '203.0.113.7'] },
    },
    {
      name: 'podCIDR alone',
      obj: { metadata: { name: 'n2' }, spec: { podCIDR: '10.244.2.0/24' } },
      expected: { name: 'n2', podCidrs: ['10.244.2.0/24'], addresses: [] },
    },
  ])('node: $name', ({ obj, expected }) => {
    expect(okValue(convert('Node', obj))).toEqual(expected);
  });
});
