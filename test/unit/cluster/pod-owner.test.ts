// A pod's owner, for `netfence map`'s grouping: its controller reference ("There cannot be more than one
// managing controller"), the Deployment for a Deployment's ReplicaSet (named `<deployment>-<pod-template-hash>`
// with the hash on its pods), shared between pods, kept by slimming, and never a reason to reject a pod.

import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from '@jest/globals';
import { convert } from '../../../src/cluster/convert.js';
import { slimObject } from '../../../src/cluster/slim.js';
import type { Pod } from '../../../src/model/index.js';

const podWith = (ownerReferences: unknown, labels: Record<string, string> = {}, name = 'p') => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels, ownerReferences },
  spec: { nodeName: 'n1' },
  status: { phase: 'Running', podIP: '10.0.0.1' },
});
const ref = (kind: string, name: string, controller: unknown = true) => ({
  apiVersion: 'apps/v1',
  kind,
  name,
  uid: `${kind}-${name}`,
  controller,
  blockOwnerDeletion: true,
});
const converted = (obj: object): Pod => {
  const c = convert('Pod', obj);
  if (!c.ok) throw new Error(`not converted: ${JSON.stringify(c)}`);
  expect(c.problems ?? []).toEqual([]);
  return c.value;
};

describe('pod owner', () => {
  it('is the controller reference; a ReplicaSet named <name>-<pod-template-hash> is that Deployment', () => {
    expect(converted(podWith([ref('ReplicaSet', 'web-6d4cf56db6')], { app: 'web', 'pod-template-hash': '6d4cf56db6' })).owner).toEqual({
      kind: 'Deployment',
      name: 'web',
    });
    // No hash label, or another one: a ReplicaSet of its own (created by hand, or not a Deployment's).
    expect(converted(podWith([ref('ReplicaSet', 'web-6d4cf56db6')], { app: 'web' })).owner).toEqual({
      kind: 'ReplicaSet',
      name: 'web-6d4cf56db6',
    });
    expect(converted(podWith([ref('ReplicaSet', 'web-6d4cf56db6')], { 'pod-template-hash': 'abc' })).owner).toEqual({
      kind: 'ReplicaSet',
      name: 'web-6d4cf56db6',
    });
    expect(converted(podWith([ref('ReplicaSet', '-abc')], { 'pod-template-hash': 'abc' })).owner).toEqual({
      kind: 'ReplicaSet',
      name: '-abc',
    });
    expect(converted(podWith([ref('StatefulSet', 'db')])).owner).toEqual({ kind: 'StatefulSet', name: 'db' });
    // A Job's owner (a CronJob) cannot be told from the names: the Job.
    expect(converted(podWith([ref('Job', 'backup-29123456')])).owner).toEqual({ kind: 'Job', name: 'backup-29123456' });
    // Only the controller counts.
    expect(converted(podWith([ref('ConfigMap', 'x', false), ref('DaemonSet', 'agent')])).owner).toEqual({
      kind: 'DaemonSet',
      name: 'agent',
    });
    expect(converted(podWith([ref('ConfigMap', 'x', false)])).owner).toBeUndefined();
    expect(converted(podWith(undefined)).owner).toBeUndefined();
  });

  it('a malformed owner reference is left out, and the pod is still read', () => {
    for (const refs of [
      'rs',
      7,
      [null],
      [{ kind: 3, name: 'x', controller: true }],
      [{ kind: 'ReplicaSet', controller: 'yes', name: 'x' }],
    ]) {
      const pod = converted(podWith(refs, { app: 'web' }));
      expect(pod.owner).toBeUndefined();
      expect(pod.ips).toEqual(['10.0.0.1']);
    }
  });

  it('pods of one owner share one owner object', () => {
    const labels = { app: 'web', 'pod-template-hash': 'h1' };
    const a = converted(podWith([ref('ReplicaSet', 'web-h1')], labels, 'a'));
    const b = converted(podWith([ref('ReplicaSet', 'web-h1')], { ...labels }, 'b'));
    expect(a.owner).toBe(b.owner);
  });

  it('slimming keeps the controller reference only, and only what is read of it', () => {
    const obj = podWith([ref('ConfigMap', 'x', false), ref('ReplicaSet', 'web-h1')], { 'pod-template-hash': 'h1' });
    const slim = slimObject('Pod', obj as unknown as KubernetesObject) as unknown as { metadata: { ownerReferences: unknown } };
    expect(slim.metadata.ownerReferences).toEqual([{ kind: 'ReplicaSet', name: 'web-h1', controller: true }]);
    expect(converted(slim).owner).toEqual({ kind: 'Deployment', name: 'web' });
  });
});
