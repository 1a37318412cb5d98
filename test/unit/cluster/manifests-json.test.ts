// JSON manifests take the JSON.parse path (manifests.ts loadJsonText); what they load, and the file,
// document and line their problems name, must be what the YAML parser gives for the same text.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadManifests } from '../../../src/cluster/manifests.js';
import { formatProblem } from '../../../src/model/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-manifests-json-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const LIST = {
  apiVersion: 'v1',
  kind: 'List',
  items: [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'prod', labels: { team: 'a' } } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'prod', labels: { app: 'web' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 80 }] }] },
      status: { phase: 'Running', podIP: '10.244.1.5' },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'db', namespace: 'prod' },
      spec: { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ from: [{ podSelector: {} }], ports: [{ port: 5432 }] }] },
    },
  ],
};

function load(name: string, text: string) {
  writeFileSync(join(dir, name), text);
  const loaded = loadManifests([join(dir, name)]);
  return { snapshot: loaded.snapshot, problems: loaded.problems.map((p) => formatProblem(p).replace(dir, '<dir>')) };
}

describe('JSON manifests', () => {
  it('load the same objects as the same manifests written as YAML', () => {
    const fromJson = load('c.json', JSON.stringify(LIST, null, 2));
    const fromYaml = load('c.yaml', stringify(LIST));
    expect(fromJson.problems).toEqual([]);
    expect(fromJson.snapshot).toEqual(fromYaml.snapshot);
    expect(fromJson.snapshot.pods.map((p) => `${p.namespace}/${p.name} ${p.ips.join(',')}`)).toEqual(['prod/web 10.244.1.5']);
    expect(fromJson.snapshot.policies[0]?.ingress?.[0]?.ports).toEqual([{ protocol: 'TCP', port: 5432 }]);
  });

  it('name the file, document and line of a field problem, as for YAML', () => {
    const broken = structuredClone(LIST) as { items: Record<string, unknown>[] };
    (broken.items[1] as { status: Record<string, unknown> }).status['phase'] = 'Sideways';
    const text = JSON.stringify(broken, null, 2);
    const line = text.split('\n').findIndex((l) => l.includes('"Sideways"')) + 1;
    expect(load('bad.json', text).problems).toEqual([
      `error: <dir>/bad.json#0: items[1].status.phase: Pod prod/web: must be one of Pending, Running, Succeeded, Failed, Unknown (got "Sideways") (line ${line})`,
    ]);
  });

  it('with a syntax error are reported with their line (the YAML parser reads them) and load nothing', () => {
    const text = JSON.stringify(LIST, null, 2).replace('"kind": "Pod",', '"kind": "Pod",,');
    const result = load('syntax.json', text);
    expect(result.snapshot.pods).toEqual([]);
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toMatch(/^error: <dir>\/syntax\.json#0: \(document\): .*line \d+/);
  });

  it('may start with a byte order mark and blank lines', () => {
    expect(load('bom.json', `\uFEFF\n  ${JSON.stringify(LIST)}`).snapshot.namespaces.map((n) => n.name)).toEqual(['prod']);
  });

  it('whose root is not an object are a problem, not a crash', () => {
    expect(load('array.json', '[1, 2]').problems).toEqual([
      'error: <dir>/array.json#0: (root): a document must be a Kubernetes object (a mapping) (line 1)',
    ]);
  });
});
