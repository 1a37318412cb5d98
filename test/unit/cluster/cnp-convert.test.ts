// ClusterNetworkPolicy manifests → model: the v1alpha2 shape, and the closed readings of what does not fit.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convert } from '../../../src/cluster/convert.js';
import { loadManifests } from '../../../src/cluster/manifests.js';

const ALL = { matchLabels: {}, matchExpressions: [] };
const house = (h: string) => ({ matchLabels: { 'conformance-house': h }, matchExpressions: [] });

const cnp = (spec: Record<string, unknown>, name = 'p') => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec,
});

describe('ClusterNetworkPolicy conversion', () => {
  it('reads tier, priority, subject, rules, every peer kind and protocol form', () => {
    const r = convert(
      'ClusterNetworkPolicy',
      cnp({
        tier: 'Baseline',
        priority: 50,
        subject: { pods: { namespaceSelector: { matchLabels: { 'conformance-house': 'gryffindor' } }, podSelector: {} } },
        ingress: [
          {
            name: 'a',
            action: 'Accept',
            from: [{ namespaces: {} }],
            protocols: [{ tcp: { destinationPort: { number: 80 } } }, { destinationNamedPort: 'dns' }],
          },
        ],
        egress: [
          {
            action: 'Deny',
            to: [{ networks: ['0.0.0.0/0', '::/0'] }, { nodes: { matchLabels: { zone: 'a' } } }],
            protocols: [{ udp: { destinationPort: { range: { start: 5353, end: 5360 } } } }, { sctp: {} }],
          },
          { action: 'Pass', to: [{ pods: { namespaceSelector: { matchLabels: { 'conformance-house': 'slytherin' } }, podSelector: {} } }] },
        ],
      }),
    );
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
    if (!r.ok) return;
    expect(r.value).toEqual({
      name: 'p',
      tier: 'Baseline',
      priority: 50,
      subject: { kind: 'pods', namespaceSelector: house('gryffindor'), podSelector: ALL },
      ingress: [
        {
          name: 'a',
          action: 'Accept',
          peers: [{ kind: 'namespaces', namespaceSelector: ALL }],
          protocols: [
            { kind: 'protocol', protocol: 'TCP', ports: { from: 80, to: 80 } },
            { kind: 'named', name: 'dns' },
          ],
        },
      ],
      egress: [
        {
          action: 'Deny',
          peers: [
            { kind: 'networks', cidrs: ['0.0.0.0/0', '::/0'] },
            { kind: 'nodes', nodeSelector: { matchLabels: { zone: 'a' }, matchExpressions: [] } },
          ],
          protocols: [
            { kind: 'protocol', protocol: 'UDP', ports: { from: 5353, to: 5360 } },
            { kind: 'protocol', protocol: 'SCTP' },
          ],
        },
        { action: 'Pass', peers: [{ kind: 'pods', namespaceSelector: house('slytherin'), podSelector: ALL }] },
      ],
    });
  });

  it('keeps an object with errors, read the closed way, with problems naming the fields', () => {
    const r = convert(
      'ClusterNetworkPolicy',
      cnp({
        tier: 'Middle',
        priority: 5000,
        subject: {},
        ingress: [{ action: 'Allow', from: [{ networks: ['10.0.0.0/8'] }] }],
        egress: [
          {
            action: 'Accept',
            to: [{ domainNames: ['*.example.com', 'www.*.example.com'] }],
            protocols: [{ tcp: { destinationPort: { range: { start: 90, end: 80 } } } }],
          },
        ],
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const fields = r.problems.map((p) => `${p.severity} ${p.field}`);
    expect(fields).toEqual(
      expect.arrayContaining([
        'error spec.tier',
        'error spec.priority',
        'error spec.subject',
        'error spec.ingress[0].action',
        'error spec.ingress[0].from[0]',
        'error spec.egress[0].to[0].domainNames[1]',
        'error spec.egress[0].protocols[0].tcp.destinationPort',
      ]),
    );
    expect(r.value.tier).toBe('Admin');
    expect(r.value.priority).toBe(0);
    expect(r.value.subject).toEqual({ kind: 'namespaces', namespaceSelector: ALL });
    expect(r.value.ingress[0]).toEqual({ peers: [{ kind: 'unknown', what: 'networks' }] });
    expect(r.value.egress[0]?.peers).toEqual([{ kind: 'unknown', what: 'domainNames' }]);
    expect(r.value.problems).toHaveLength(r.problems.length);
  });

  // "DomainNames provides a way to specify domain names as peers. DomainNames is only supported for Accept
  // rules. … DomainNames can have up to 25 domain names specified in one rule." (v1alpha2, experimental)
  describe('egress domainNames', () => {
    const egress = (rule: Record<string, unknown>, tier = 'Admin') =>
      convert('ClusterNetworkPolicy', cnp({ tier, priority: 1, subject: { namespaces: {} }, egress: [rule] }));
    const fields = (r: ReturnType<typeof egress>) => r.problems.map((p) => `${p.severity} ${p.field}: ${p.message}`);

    it('reads an Admin Accept peer: exact, wildcard and fully qualified entries, repeats once', () => {
      const r = egress({
        name: 'api',
        action: 'Accept',
        to: [{ domainNames: ['good.example', '*.cdn.example', 'fq.example.', 'good.example'] }],
      });
      expect(r.problems).toEqual([]);
      if (!r.ok) throw new Error('refused');
      expect(r.value.egress[0]).toEqual({
        name: 'api',
        action: 'Accept',
        peers: [{ kind: 'domainNames', names: ['good.example', '*.cdn.example', 'fq.example.'] }],
      });
    });

    it.each([
      ['a Deny rule', { action: 'Deny', to: [{ domainNames: ['good.example'] }] }, 'Admin', 'error', 'only supported for Accept rules'],
      ['a Pass rule', { action: 'Pass', to: [{ domainNames: ['good.example'] }] }, 'Admin', 'error', 'only supported for Accept rules'],
      ['the Baseline tier', { action: 'Accept', to: [{ domainNames: ['good.example'] }] }, 'Baseline', 'warning', 'Admin tier only'],
      [
        'a wildcard inside a name',
        { action: 'Accept', to: [{ domainNames: ['www.*.example'] }] },
        'Admin',
        'error',
        'is not a domain name',
      ],
      ['a partial wildcard', { action: 'Accept', to: [{ domainNames: ['*blog.example'] }] }, 'Admin', 'error', 'is not a domain name'],
      ['a bare label', { action: 'Accept', to: [{ domainNames: ['localhost'] }] }, 'Admin', 'error', 'is not a domain name'],
      ['no entry', { action: 'Accept', to: [{ domainNames: [] }] }, 'Admin', 'error', '1 to 25'],
      [
        '26 entries',
        { action: 'Accept', to: [{ domainNames: Array.from({ length: 26 }, (_, i) => `n${i}.example`) }] },
        'Admin',
        'error',
        '1 to 25',
      ],
    ])('refuses it on %s: the rule fails closed', (_name, rule, tier, severity, message) => {
      const r = egress(rule, tier);
      expect(fields(r)).toEqual([
        expect.stringMatching(new RegExp(`^${severity} spec\\.egress\\[0\\]\\.to\\[0\\]\\.domainNames.*${message}.*fails closed`)),
      ]);
      const value = r.ok ? r.value : undefined;
      if (value) expect(value.egress[0]?.peers).toEqual([{ kind: 'unknown', what: 'domainNames' }]);
    });

    it('refuses it as an ingress peer', () => {
      const r = convert(
        'ClusterNetworkPolicy',
        cnp({
          tier: 'Admin',
          priority: 1,
          subject: { namespaces: {} },
          ingress: [{ action: 'Accept', from: [{ domainNames: ['good.example'] }] }],
        }),
      );
      expect(fields(r)).toEqual([expect.stringMatching(/^error spec\.ingress\[0\]\.from\[0\]: peer domainNames is not supported/)]);
    });
  });

  it('loads from manifests with apiVersion policy.networking.k8s.io/v1alpha2 and refuses another version', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nft-cnpm-'));
    try {
      writeFileSync(
        join(dir, 'a.yaml'),
        [
          'apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: guard}\nspec: {tier: Admin, priority: 3, subject: {namespaces: {}}, egress: [{action: Deny, to: [{networks: ["169.254.169.254/32"]}]}]}',
          'apiVersion: policy.networking.k8s.io/v1alpha1\nkind: ClusterNetworkPolicy\nmetadata: {name: old}\nspec: {}',
        ].join('\n---\n'),
      );
      const loaded = loadManifests([dir]);
      expect(loaded.snapshot.clusterPolicies?.map((c) => c.name)).toEqual(['guard']);
      expect(loaded.problems.map((p) => p.message)).toEqual([
        expect.stringContaining('ClusterNetworkPolicy must be policy.networking.k8s.io/v1alpha2'),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a manifest set without ClusterNetworkPolicies gives a snapshot without the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nft-cnpm-'));
    try {
      writeFileSync(join(dir, 'a.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n');
      expect('clusterPolicies' in loadManifests([dir]).snapshot).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
