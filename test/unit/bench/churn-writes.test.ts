import { describe, expect, it } from '@jest/globals';
import { ChurnWriter, PEER_LABEL } from '../../../scripts/bench-lib/churn-writes.js';
import { generateCluster } from '../../../scripts/bench-lib/generator.js';
import { podObject, policyObject } from '../../../scripts/bench-daemon.js';
import type { KubeObject } from '../../../test/fakes/fake-apiserver.js';

const { snapshot } = generateCluster({ tier: 'medium', seed: 2, node: 'node-1' });
const running = snapshot.pods.filter((p) => !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0);
const probe = running.find((p) => p.nodeName !== 'node-1')!;
const probeKey = `${probe.namespace}/${probe.name}`;

function churn(changes: number): { writes: { verb: string; obj: KubeObject }[]; writer: ChurnWriter } {
  const writes: { verb: string; obj: KubeObject }[] = [];
  const writer = new ChurnWriter(
    {
      create: (obj) => writes.push({ verb: 'create', obj }),
      update: (obj) => writes.push({ verb: 'update', obj }),
      delete: (obj) => void writes.push({ verb: 'delete', obj: obj as KubeObject }),
    },
    {
      pods: snapshot.pods,
      policies: snapshot.policies,
      podCidrs: new Map(snapshot.nodes.map((n) => [n.name, n.podCidrs[0]!])),
      node: 'node-1',
      probePods: new Set([probeKey]),
      seed: 7,
      podObject,
      policyObject,
    },
  );
  for (let i = 0; i < changes; i++) writer.next();
  return { writes, writer };
}

describe('ChurnWriter: the churn benchmark’s steady mix of changes', () => {
  const { writes, writer } = churn(3000);
  const current = writer.current();

  it('mixes label flips, replacements and port edits about 4 : 3 : 3', () => {
    expect(writer.counts['label flip'] / 3000).toBeCloseTo(0.4, 1);
    expect(writer.counts['pod replaced'] / 3000).toBeCloseTo(0.3, 1);
    expect(writer.counts['policy port edit'] / 3000).toBeCloseTo(0.3, 1);
  });

  it('a replacement is a delete and a create on the same node, with an address no other pod holds; about a third on this node', () => {
    const creates = writes.filter((w) => w.verb === 'create').map((w) => w.obj);
    expect(creates).toHaveLength(writer.counts['pod replaced']);
    const local = creates.filter((o) => (o.spec as { nodeName: string }).nodeName === 'node-1').length;
    expect(local / creates.length).toBeGreaterThan(0.25);
    expect(local / creates.length).toBeLessThan(0.42);
    const ips = current.pods.flatMap((p) => p.ips);
    expect(new Set(ips).size).toBe(ips.length);
    for (const p of current.pods.filter((p) => !p.hostNetwork && p.ips.length > 0)) {
      const cidr = snapshot.nodes.find((n) => n.name === p.nodeName)!.podCidrs[0]!;
      expect(p.ips[0]!.startsWith(cidr.replace(/\.0\/24$/, '.'))).toBe(true);
    }
  });

  it('the API server ends with as many pods and policies as it started with, the probe pod never written (the outside measurement flips it alone)', () => {
    expect(current.pods).toHaveLength(snapshot.pods.length);
    expect(current.policies).toHaveLength(snapshot.policies.length);
    expect(writes.some((w) => w.obj.kind === 'Pod' && w.obj.metadata.name === probe.name)).toBe(false);
  });

  it('a port edit changes the first port of the first ingress rule to one it did not have', () => {
    const edit = writes.find((w) => w.obj.kind === 'NetworkPolicy')!;
    const before = snapshot.policies.find((p) => p.name === edit.obj.metadata.name && p.namespace === edit.obj.metadata.namespace)!;
    const port = (edit.obj.spec as { ingress: { ports: { port: number }[] }[] }).ingress[0]!.ports[0]!.port;
    expect(port).not.toBe(before.ingress![0]!.ports![0]!.port);
  });

  it('flipProbe toggles the peer label on and off', () => {
    const { writer: w } = churn(0);
    expect(w.flipProbe(probeKey)).toBe(true);
    expect(w.current().pods.find((p) => p.name === probe.name)!.labels[PEER_LABEL]).toBe('on');
    expect(w.flipProbe(probeKey)).toBe(false);
    expect(w.current().pods.find((p) => p.name === probe.name)!.labels[PEER_LABEL]).toBeUndefined();
  });
});
