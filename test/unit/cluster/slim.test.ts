// The informer caches slimmed objects: whatever convert() reads must survive slimming, and the bulk of a
// real API object (managedFields, env, volumes, conditions) must not.
import { convert } from '../../../src/cluster/convert.js';
import type { ObjectKind } from '../../../src/cluster/object-kind.js';
import { slimObject } from '../../../src/cluster/slim.js';
import type { KubernetesObject } from '@kubernetes/client-node';

const asApi = (o: object): KubernetesObject => o as unknown as KubernetesObject;

const managedFields = Array.from({ length: 4 }, (_, i) => ({
  manager: `controller-${i}`,
  operation: 'Update',
  fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"web"}': {} } } },
}));

const apiPod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-7d9f',
    namespace: 'prod',
    uid: '5b0c-11',
    resourceVersion: '4711',
    labels: { app: 'web', tier: 'frontend' },
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(2000) },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f', uid: 'r1' }],
    managedFields,
  },
  spec: {
    nodeName: 'node-1',
    hostNetwork: false,
    volumes: [{ name: 'token', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }],
    containers: [
      {
        name: 'web',
        image: 'nginx:1.27',
        env: Array.from({ length: 20 }, (_, i) => ({ name: `VAR_${i}`, value: 'v'.repeat(40) })),
        ports: [
          { name: 'http', containerPort: 8080, protocol: 'TCP' },
          { name: 'dns', containerPort: 5353, protocol: 'UDP' },
        ],
        resources: { limits: { cpu: '500m' } },
      },
      { name: 'sidecar', image: 'envoy', ports: [{ name: 'admin', containerPort: 9901 }] },
    ],
  },
  status: {
    phase: 'Running',
    podIP: '10.244.1.7',
    podIPs: [{ ip: '10.244.1.7' }, { ip: 'fd00::7' }],
    hostIP: '192.168.0.10',
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-01T00:00:00Z' }],
    containerStatuses: [{ name: 'web', ready: true, restartCount: 0, image: 'nginx:1.27' }],
  },
};

const apiNode = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'node-1', uid: 'n1', resourceVersion: '9', labels: { 'kubernetes.io/hostname': 'node-1' }, managedFields },
  spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:1::/64'], providerID: 'x' },
  status: {
    addresses: [
      { type: 'InternalIP', address: '192.168.0.10' },
      { type: 'Hostname', address: 'node-1' },
    ],
    images: Array.from({ length: 30 }, (_, i) => ({ names: [`registry/image-${i}:latest`], sizeBytes: 1e8 })),
    conditions: [{ type: 'Ready', status: 'True' }],
  },
};

const apiNamespace = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: 'prod', uid: 'ns1', resourceVersion: '3', labels: { team: 'a' }, managedFields },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
};

const apiPolicy = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'db', namespace: 'prod', uid: 'p1', resourceVersion: '12', creationTimestamp: '2026-11-02T10:00:00Z', managedFields },
  spec: {
    podSelector: { matchLabels: { role: 'db' } },
    policyTypes: ['Ingress', 'Egress'],
    ingress: [
      {
        from: [{ ipBlock: { cidr: '172.17.0.0/16', except: ['172.17.1.0/24'] } }],
        ports: [{ port: 'http' }, { port: 6379, endPort: 6380 }],
      },
    ],
    egress: [{ to: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] } }] }],
  },
};

describe('slimObject keeps what convert reads', () => {
  it.each<[ObjectKind, object]>([
    ['Pod', apiPod],
    ['Node', apiNode],
    ['Namespace', apiNamespace],
    ['NetworkPolicy', apiPolicy],
  ])('%s converts to the same model slimmed as whole', (kind, obj) => {
    const whole = convert(kind, obj);
    const slim = convert(kind, slimObject(kind, asApi(obj)));
    expect(whole.ok).toBe(true);
    expect(slim).toEqual(whole);
  });

  it('a NetworkPolicy keeps its creationTimestamp (the node budget admits oldest first), as a Date or as text', () => {
    const slim = convert('NetworkPolicy', slimObject('NetworkPolicy', asApi(apiPolicy)));
    expect(slim.ok && slim.value.creationTimestamp).toBe('2026-11-02T10:00:00.000Z');
    const asDate = { ...apiPolicy, metadata: { ...apiPolicy.metadata, creationTimestamp: new Date('2026-11-02T10:00:00Z') } };
    const fromDate = convert('NetworkPolicy', slimObject('NetworkPolicy', asApi(asDate)));
    expect(fromDate.ok && fromDate.value.creationTimestamp).toBe('2026-11-02T10:00:00.000Z');
  });

  it('a pod with malformed fields yields the same problems slimmed as whole', () => {
    const broken = { ...apiPod, status: { ...apiPod.status, podIPs: [{ ip: 'not-an-ip' }] } };
    expect(convert('Pod', slimObject('Pod', asApi(broken)))).toEqual(convert('Pod', broken));
  });

  it('drops managedFields, annotations, env, volumes and status noise', () => {
    const slim = slimObject('Pod', asApi(apiPod)) as unknown as typeof apiPod;
    expect(slim.metadata).toEqual({
      name: 'web-7d9f',
      namespace: 'prod',
      uid: '5b0c-11',
      resourceVersion: '4711',
      labels: apiPod.metadata.labels,
    });
    expect(slim.spec.containers.map((c) => Object.keys(c).sort())).toEqual([
      ['name', 'ports'],
      ['name', 'ports'],
    ]);
    expect(Object.keys(slim.spec).sort()).toEqual(['containers', 'hostNetwork', 'nodeName']);
    expect(Object.keys(slim.status).sort()).toEqual(['phase', 'podIP', 'podIPs']);
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(apiPod).length / 5);
  });

  it('keeps deletionTimestamp, which marks a terminating object', () => {
    const terminating = { ...apiNamespace, metadata: { ...apiNamespace.metadata, deletionTimestamp: '2026-11-23T00:00:00Z' } };
    expect(slimObject('Namespace', asApi(terminating)).metadata).toHaveProperty('deletionTimestamp', '2026-11-23T00:00:00Z');
  });
});
