// Objects the API server would reject are refused one field at a time, with a problem naming it, and the
// rest of the object (and every other object) still loads.

import { convert, type Converted } from '../../../src/cluster/convert.js';
import { selectorErrors, selectorMatches } from '../../../src/compile/selectors.js';
import type { Problem } from '../../../src/model/index.js';

const problemsOf = (r: Converted<unknown>) => r.problems.map((p: Problem) => `${p.field} | ${p.message}`);

describe('convert: values the API server rejects', () => {
  it('a Node podCIDR 10.244.1.0/33 is refused as a problem, not thrown later from the sync loop', () => {
    const r = convert('Node', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { podCIDR: '10.244.1.0/33', podCIDRs: ['10.244.1.0/33'] },
    });
    if (!r.ok) throw new Error('a Node with a bad podCIDR is still a Node');
    expect(r.value.podCidrs).toEqual([]);
    expect(problemsOf(r)).toEqual(['spec.podCIDRs[0] | "10.244.1.0/33" is not a CIDR; ignored']);
  });

  it.each(['010.244.1.0/24', '10.244.1/24', '10.244.1.0/024', '10.244.1.0'])('Node podCIDR %p is refused', (cidr) => {
    const r = convert('Node', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: cidr } });
    expect(r.ok && r.value.podCidrs).toEqual([]);
  });

  it('keeps the valid podCIDRs of a dual-stack Node when one is bad', () => {
    const r = convert('Node', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { podCIDRs: ['10.244.1.0/24', 'fd00::/129'] },
    });
    expect(r.ok && r.value.podCidrs).toEqual(['10.244.1.0/24']);
  });

  it('a containerPort of 70000 is dropped with a problem; the pod and its other ports load', () => {
    const r = convert('Pod', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'prod' },
      spec: {
        nodeName: 'n1',
        containers: [
          {
            name: 'c',
            ports: [
              { name: 'big', containerPort: 70000 },
              { name: 'http', containerPort: 8080 },
            ],
          },
        ],
      },
      status: { phase: 'Running', podIP: '10.244.1.5' },
    });
    if (!r.ok) throw new Error('the pod should load');
    expect(r.value.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(problemsOf(r)).toEqual(['spec.containers[0].ports[0].containerPort | 70000 is not a port number (1-65535); ignored']);
  });

  it.each(['010.244.1.5', 'fe80::1%eth0'])('pod IP %p is not an address', (ip) => {
    const r = convert('Pod', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'prod' },
      spec: {},
      status: { podIP: ip },
    });
    expect(r.ok && r.value.ips).toEqual([]);
  });
});

describe('convert: a label key named like an object prototype', () => {
  // JSON.parse and YAML keep `__proto__` as a key; the API server refuses it, a manifest file may hold it.
  const labels = JSON.parse('{"__proto__":"x","constructor":"y"}') as Record<string, unknown>;
  const pod = (name: string, podLabels: unknown) =>
    convert('Pod', { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'shop', labels: podLabels }, spec: {}, status: {} });

  it('is kept on a pod, and in a selector selects only the pods carrying it', () => {
    const carrying = pod('a', labels);
    const plain = pod('b', { app: 'web' });
    if (!carrying.ok || !plain.ok) throw new Error('both pods load');
    expect(Object.entries(carrying.value.labels)).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y'],
    ]);
    const policy = convert('NetworkPolicy', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'shop' },
      spec: { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { ...labels } } }] }], policyTypes: ['Ingress'] },
    });
    if (!policy.ok) throw new Error('the policy loads');
    const selector = policy.value.ingress?.[0]?.peers?.[0]?.podSelector;
    if (!selector) throw new Error('the peer keeps its podSelector');
    expect(Object.entries(selector.matchLabels)).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y'],
    ]);
    expect(selectorMatches(selector, carrying.value.labels)).toBe(true);
    expect(selectorMatches(selector, plain.value.labels)).toBe(false);
    // And the compiler refuses it as the API server would: the policy fails closed.
    expect(selectorErrors(selector)).toEqual([{ field: 'matchLabels["__proto__"]', message: '"__proto__" is not a valid label key' }]);
  });
});
