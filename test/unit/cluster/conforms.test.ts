// conforms.ts lets objects past schema validation without ajv. It must never pass an object its schema
// refuses (that object's problems would go unreported), so it is held against the ajv validator on
// full objects and on every field of them replaced by values of every JSON type, or removed.

import { Ajv } from 'ajv';
import { conforms } from '../../../src/cluster/conforms.js';
import {
  clusterNetworkPolicySchema,
  namespaceSchema,
  networkPolicySchema,
  nodeSchema,
  podSchema,
  schemaErrors,
} from '../../../src/cluster/schemas.js';
import type { ObjectKind } from '../../../src/cluster/object-kind.js';

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const schemaValid = {
  Pod: ajv.compile(podSchema),
  Namespace: ajv.compile(namespaceSchema),
  Node: ajv.compile(nodeSchema),
  NetworkPolicy: ajv.compile(networkPolicySchema),
  ClusterNetworkPolicy: ajv.compile(clusterNetworkPolicySchema),
};

const selector = () => ({
  matchLabels: { app: 'web', 'app.kubernetes.io/name': 'x' },
  matchExpressions: [
    { key: 'tier', operator: 'In', values: ['a', 'b'] },
    { key: 'env', operator: 'Exists' },
  ],
});

const samples: Record<Exclude<ObjectKind, 'ClusterNetworkPolicy'>, () => Record<string, unknown>> = {
  Pod: () => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-1', namespace: 'prod', uid: 'u-1', resourceVersion: '7', labels: { app: 'web' } },
    spec: {
      nodeName: 'node-1',
      hostNetwork: false,
      containers: [
        {
          name: 'c',
          ports: [
            { name: 'http', containerPort: 80, protocol: 'TCP' },
            { containerPort: 53, protocol: 'UDP' },
          ],
        },
      ],
    },
    status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] },
  }),
  Namespace: () => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'prod', labels: { env: 'prod' } } }),
  Node: () => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-1', labels: { zone: 'a' } },
    spec: { podCIDR: '10.0.0.0/24', podCIDRs: ['10.0.0.0/24', 'fd00::/64'] },
    status: { addresses: [{ type: 'InternalIP', address: '192.168.0.1' }] },
  }),
  NetworkPolicy: () => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'prod' },
    spec: {
      podSelector: selector(),
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          from: [{ podSelector: selector(), namespaceSelector: selector() }, { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } }],
          ports: [{ protocol: 'TCP', port: 80, endPort: 90 }, { port: 'http' }],
        },
      ],
      egress: [{ to: [{ namespaceSelector: {} }], ports: [{ protocol: 'UDP', port: 53 }] }],
    },
  }),
};

// One value of every JSON type (and the shapes the schemas distinguish), plus `undefined` = removed.
const REPLACEMENTS: unknown[] = [
  undefined,
  null,
  true,
  0,
  80,
  1.5,
  -1,
  '',
  'x',
  'TCP',
  'Running',
  'In',
  'Ingress',
  [],
  ['x'],
  [1],
  [null],
  [{}],
  {},
  { x: 1 },
  { x: 'y' },
];

type Path = (string | number)[];

function paths(v: unknown, at: Path = []): Path[] {
  if (v === null || typeof v !== 'object') return [];
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  return entries.flatMap(([k, x]) => [[...at, k], ...paths(x, [...at, k])]);
}

function replaced(obj: Record<string, unknown>, path: Path, value: unknown): unknown {
  const copy = structuredClone(obj);
  let parent = copy as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === undefined && !Array.isArray(parent)) delete parent[last];
  else parent[last] = value;
  return copy;
}

describe('conforms: passes only what the schema passes', () => {
  it.each(Object.keys(samples) as (keyof typeof samples)[])('%s: the full sample passes both (the fast path is taken)', (kind) => {
    const obj = samples[kind]();
    expect(schemaValid[kind](obj)).toBe(true);
    expect(conforms(kind, obj)).toBe(true);
  });

  it.each(Object.keys(samples) as (keyof typeof samples)[])('%s: no mutation of any field passes conforms but fails the schema', (kind) => {
    const obj = samples[kind]();
    const wrong: string[] = [];
    let passedFast = 0;
    let refusedBySchema = 0;
    for (const path of paths(obj)) {
      for (const value of REPLACEMENTS) {
        const mutated = replaced(obj, path, value);
        const valid = schemaValid[kind](mutated);
        if (!valid) refusedBySchema++;
        if (conforms(kind, mutated)) {
          passedFast++;
          if (!valid) wrong.push(`${path.join('.')} = ${JSON.stringify(value)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    // The mutations exercise both sides: many are refused by the schema, many still pass the fast check.
    expect(refusedBySchema).toBeGreaterThan(20);
    expect(passedFast).toBeGreaterThan(20);
  });

  it('non-objects and objects without a name do not pass', () => {
    for (const kind of Object.keys(samples) as ObjectKind[]) {
      for (const v of [null, undefined, 1, 'x', [], {}, { metadata: {} }, { metadata: { name: '' } }, { metadata: null }])
        expect(conforms(kind, v)).toBe(false);
    }
  });

  it('a ClusterNetworkPolicy always goes to ajv', () => {
    expect(conforms('ClusterNetworkPolicy', { metadata: { name: 'x' } })).toBe(false);
  });

  it('schemaErrors still reports what ajv finds when conforms refuses', () => {
    const pod = replaced(samples.Pod(), ['spec', 'containers', 0, 'ports', 0, 'containerPort'], '80');
    expect(schemaErrors('Pod', pod)).toEqual([
      { field: 'spec.containers[0].ports[0].containerPort', message: 'must be integer (got "80")' },
    ]);
    expect(schemaErrors('Pod', samples.Pod())).toEqual([]);
  });
});
