// The `netfence.io/mode` annotation through the informer's slimming and convert(): `audit` marks the object
// audited; anything but `audit`/`enforce` is a warning naming the field, and the object stays enforced and
// valid (a warning must not make a policy fail closed, nor lift a Deny).
import type { KubernetesObject } from '@kubernetes/client-node';
import { convert } from '../../../src/cluster/convert.js';
import { slimObject } from '../../../src/cluster/slim.js';
import type { ClusterNetworkPolicy, NetworkPolicy } from '../../../src/model/index.js';

const policy = (annotations?: Record<string, unknown>) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'default-deny', namespace: 'shop', ...(annotations ? { annotations } : {}) },
  spec: { podSelector: {}, policyTypes: ['Ingress'] },
});
const clusterPolicy = (annotations?: Record<string, unknown>) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name: 'guard', ...(annotations ? { annotations } : {}) },
  spec: { tier: 'Admin', priority: 10, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
});
const viaInformer = (o: object): unknown => slimObject((o as { kind: 'NetworkPolicy' }).kind, o as unknown as KubernetesObject);

describe('netfence.io/mode', () => {
  it('audit survives the informer and marks a NetworkPolicy audited', () => {
    const r = convert('NetworkPolicy', viaInformer(policy({ 'netfence.io/mode': 'audit', other: 'x'.repeat(100) })));
    expect(r.ok && r.value).toMatchObject({ name: 'default-deny', audit: true });
    expect(r.problems).toEqual([]);
  });

  it('audit marks a ClusterNetworkPolicy audited', () => {
    const r = convert('ClusterNetworkPolicy', viaInformer(clusterPolicy({ 'netfence.io/mode': 'audit' })));
    expect(r.ok && (r.value as ClusterNetworkPolicy).audit).toBe(true);
  });

  it('no annotation, or enforce: enforced, no problem', () => {
    for (const annotations of [undefined, { 'netfence.io/mode': 'enforce' }]) {
      const r = convert('NetworkPolicy', policy(annotations));
      expect(r.ok && (r.value as NetworkPolicy).audit).toBeUndefined();
      expect(r.problems).toEqual([]);
    }
  });

  it.each([['Audit'], ['dry-run'], [true]])('%p is a warning naming the field; the object stays enforced and valid', (value) => {
    for (const [kind, object] of [
      ['NetworkPolicy', policy({ 'netfence.io/mode': value })],
      ['ClusterNetworkPolicy', clusterPolicy({ 'netfence.io/mode': value })],
    ] as const) {
      const r = convert(kind, object);
      if (!r.ok) throw new Error('expected the object to be kept');
      expect(r.value.audit).toBeUndefined();
      expect(r.value.problems).toBeUndefined();
      expect(r.problems).toEqual([
        expect.objectContaining({
          severity: 'warning',
          field: 'metadata.annotations["netfence.io/mode"]',
          message: expect.stringContaining('is not a mode (audit or enforce); the policy is enforced'),
        }),
      ]);
    }
  });
});
