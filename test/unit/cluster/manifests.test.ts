import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { incompleteRead, loadManifests, parseFieldPath } from '../../../src/cluster/manifests.js';
import { formatProblem } from '../../../src/model/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-manifests-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function write(files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

const NS = `apiVersion: v1
kind: Namespace
metadata:
  name: prod
`;
const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: prod
  labels: {app: web}
spec:
  nodeName: n1
  containers:
  - name: c
    ports:
    - {name: http, containerPort: 80}
status:
  phase: Running
  podIP: 10.244.1.5
`;
const POLICY = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: prod}
spec:
  podSelector: {}
`;

interface Case {
  readonly name: string;
  readonly files: Record<string, string>;
  /** `kind key` of everything loaded, in snapshot order. */
  readonly loaded: readonly string[];
  /** formatProblem() of every problem, with `<dir>` for the temp dir. */
  readonly problems: readonly string[];
}

function loadedKeys(r: ReturnType<typeof loadManifests>): string[] {
  const s = r.snapshot;
  return [
    ...s.nodes.map((n) => `Node ${n.name}`),
    ...s.namespaces.map((n) => `Namespace ${n.name}`),
    ...s.pods.map((p) => `Pod ${p.namespace}/${p.name}`),
    ...s.policies.map((p) => `NetworkPolicy ${p.namespace}/${p.name}${p.problems ? ' (invalid)' : ''}`),
  ];
}

describe('loadManifests', () => {
  it.each<Case>([
    {
      name: 'multi-document YAML',
      files: { 'all.yaml': `${NS}---\n${POD}---\n${POLICY}` },
      loaded: ['Namespace prod', 'Pod prod/web', 'NetworkPolicy prod/deny'],
      problems: [],
    },
    {
      name: 'a broken document in the middle of a good file is skipped, the rest loads',
      files: { 'all.yaml': `${NS}---\nkind: Pod\nmetadata: {name: bad\n---\n${POLICY}` },
      loaded: ['Namespace prod', 'NetworkPolicy prod/deny'],
      problems: [expect.stringMatching(/^error: <dir>\/all\.yaml#1: \(document\): Flow map .* at line 8, column 1$/) as unknown as string],
    },
    {
      name: 'schema failure names the document, field and line',
      files: {
        'pods.yaml': `${POD}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p2\nspec:\n  containers:\n  - ports:\n    - containerPort: "80"\n`,
      },
      loaded: ['Pod prod/web'],
      problems: [
        'error: <dir>/pods.yaml#1: spec.containers[0].ports[0].containerPort: Pod default/p2: must be integer (got "80") (line 24)',
      ],
    },
    {
      name: 'a policy with schema errors is kept, its problems travel on it',
      files: { 'np.yaml': `${POLICY}  ingress:\n  - ports:\n    - port: [80]\n` },
      loaded: ['NetworkPolicy prod/deny (invalid)'],
      problems: [],
    },
    {
      name: 'not an object, missing kind, unknown kind, wrong apiVersion',
      files: {
        'x.yaml': `- a\n- b\n---\nmetadata: {name: x}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\napiVersion: extensions/v1beta1\nkind: NetworkPolicy\nmetadata: {name: old}\n`,
      },
      loaded: [],
      problems: [
        'error: <dir>/x.yaml#0: (root): a document must be a Kubernetes object (a mapping) (line 1)',
        'error: <dir>/x.yaml#1: kind: required field "kind" is missing (line 4)',
        'warning: <dir>/x.yaml#2: kind: kind "Deployment" is not used by netfence; skipped',
        'error: <dir>/x.yaml#3: apiVersion: NetworkPolicy must be networking.k8s.io/v1 (got "extensions/v1beta1") (line 10)',
      ],
    },
    {
      name: 'List and PodList are expanded; a bad item is skipped alone',
      files: {
        'list.json': JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
            { apiVersion: 'v1', metadata: { name: 'nokind' } },
          ],
        }),
        'pods.yaml': `apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: p1, namespace: a}\n- metadata: {name: p2, namespace: a}\n  status: {phase: Sideways}\n`,
      },
      loaded: ['Namespace a', 'Pod a/p1'],
      problems: [
        'error: <dir>/list.json#0: items[1].kind: required field "kind" is missing (line 1)',
        'error: <dir>/pods.yaml#0: items[1].status.phase: Pod a/p2: must be one of Pending, Running, Succeeded, Failed, Unknown (got "Sideways") (line 6)',
      ],
    },
    {
      name: 'directories recurse in sorted order; hidden entries and other extensions are skipped',
      files: {
        'b/ns.yml': NS,
        'a/pod.yaml': POD,
        '.hidden/np.yaml': POLICY,
        'README.md': 'kind: Pod',
        'c/empty.yaml': '# nothing here\n---\n',
      },
      loaded: ['Namespace prod', 'Pod prod/web'],
      problems: [],
    },
    {
      name: 'a later definition replaces an earlier one, with a warning',
      files: { 'a.yaml': NS, 'b.yaml': NS.replace('name: prod', 'name: prod\n  labels: {v: "2"}') },
      loaded: ['Namespace prod'],
      problems: ['warning: Namespace prod: (root): defined more than once; the last definition wins'],
    },
  ])('$name', ({ files, loaded, problems }) => {
    write(files);
    const r = loadManifests([dir]);
    expect(loadedKeys(r)).toEqual(loaded);
    expect(r.problems.map((p) => formatProblem(p).replaceAll(dir, '<dir>'))).toEqual(problems);
  });

  it('takes files and directories, and lists the files it read', () => {
    write({
      'one.yaml': NS,
      'd/two.json': JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.1.0/24' } }),
    });
    const r = loadManifests([join(dir, 'one.yaml'), join(dir, 'd')]);
    expect(r.files).toEqual([join(dir, 'one.yaml'), join(dir, 'd', 'two.json')]);
    expect(r.snapshot.nodes).toEqual([{ name: 'n1', podCidrs: ['10.244.1.0/24'], addresses: [] }]);
    expect(r.snapshot.namespaces[0]?.labels).toEqual({ 'kubernetes.io/metadata.name': 'prod' });
  });

  it('reports a missing path and a dangling manifest symlink as incomplete reads', () => {
    symlinkSync(join(dir, 'nowhere.yaml'), join(dir, 'link.yaml'));
    symlinkSync(join(dir, 'nowhere.txt'), join(dir, 'link.txt'));
    const r = loadManifests([join(dir, 'missing'), dir]);
    expect(r.problems.map((p) => `${p.severity} ${p.object.replaceAll(dir, '<dir>')} ${p.field}`)).toEqual([
      'error <dir>/missing (file)',
      'error <dir>/link.yaml (file)',
    ]);
    expect(incompleteRead(r.problems)).toHaveLength(2);
    expect(r.files).toEqual([join(dir, 'link.yaml')]);
  });

  // Each of these would otherwise load as "fewer objects" and shrink what is programmed.
  it.each<{ name: string; files: Record<string, string>; path?: string; problem: RegExp }>([
    {
      name: 'an empty directory',
      files: { 'sub/.keep': '' },
      path: 'sub',
      problem: /^error: <dir>\/sub: \(file\): holds no manifest file/,
    },
    {
      name: 'a 0-byte file (truncated before it is written)',
      files: { 'a.yaml': '' },
      problem: /^error: <dir>\/a\.yaml: \(file\): is empty/,
    },
    { name: 'a whitespace-only file', files: { 'a.yaml': '\n  \n' }, problem: /^error: <dir>\/a\.yaml: \(file\): is empty/ },
    {
      name: 'a JSON file cut off mid-write',
      files: { 'a.json': '{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "x", "namespace"' },
      problem: /^error: <dir>\/a\.json#0: \(document\): /,
    },
  ])('$name is an incomplete read', ({ files, path, problem }) => {
    write(files);
    const r = loadManifests([path ? join(dir, path) : dir]);
    expect(incompleteRead(r.problems).map((p) => formatProblem(p).replaceAll(dir, '<dir>'))).toEqual([expect.stringMatching(problem)]);
  });

  it('an empty `kind: List` or a comments-only file is a deliberately empty source, not an error', () => {
    write({ 'none.yaml': 'apiVersion: v1\nkind: List\nitems: []\n', 'off.yaml': '# all policies removed on purpose\n' });
    const r = loadManifests([dir]);
    expect(r.problems).toEqual([]);
    expect(loadedKeys(r)).toEqual([]);
  });

  it('keeps the invalid policy problems on the policy', () => {
    write({ 'np.yaml': `${POLICY}  egress: {to: []}\n` });
    const [policy] = loadManifests([dir]).snapshot.policies;
    expect(policy?.problems?.map(formatProblem)).toEqual(['error: NetworkPolicy prod/deny: spec.egress: must be array (got object)']);
    expect(policy?.egress).toEqual([{}]);
  });
});

describe('parseFieldPath', () => {
  it.each([
    { field: 'spec.ingress[0].ports[1].port', segments: ['spec', 'ingress', 0, 'ports', 1, 'port'] },
    { field: 'metadata.labels["app.kubernetes.io/name"]', segments: ['metadata', 'labels', 'app.kubernetes.io/name'] },
    { field: '(root)', segments: [] },
    { field: 'items[3]', segments: ['items', 3] },
  ])('$field', ({ field, segments }) => {
    expect(parseFieldPath(field)).toEqual(segments);
  });
});
