// deploy/ and deploy/uninstall/ as the cluster receives them: rendered by `kubectl kustomize` (what
// `kubectl apply -k` applies; scripts/lib/prereqs.sh installs kubectl), not read file by file.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';

interface Container {
  name: string;
  image: string;
  livenessProbe?: { httpGet: { host?: string; path: string } };
  startupProbe?: { httpGet: { host?: string; path: string }; periodSeconds?: number; failureThreshold?: number };
  readinessProbe?: { httpGet: { host?: string; path: string } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: {
    runAsUser?: number;
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  nodeSelector?: Record<string, string>;
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; hostPath?: { path: string } }[];
}
interface Rendered {
  kind: string;
  metadata: { name: string };
  spec?: { template: { spec: PodSpec } };
}

const ROOT = process.cwd();
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

function render(dir: string): Rendered[] {
  const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(text).map((d) => d.toJS() as Rendered);
}
const daemonSets = (docs: Rendered[]) => docs.filter((d) => d.kind === 'DaemonSet');
const podOf = (d: Rendered): PodSpec => d.spec!.template.spec;
const allContainers = (pod: PodSpec) => [...(pod.initContainers ?? []), ...pod.containers];
/** Kubernetes binary memory quantities (Mi, Gi) → MiB. */
function mebibytes(quantity: string | undefined): number {
  const [, value = 'NaN', unit] = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '') ?? [];
  return Number(value) * (unit === 'Gi' ? 1024 : 1);
}

const install = render(join(ROOT, 'deploy'));
const uninstall = render(join(ROOT, 'deploy/uninstall'));
const daemon = podOf(daemonSets(install)[0]!);
const daemonContainer = daemon.containers.find((c) => c.name === 'netfence')!;

describe('kubectl kustomize deploy/ and deploy/uninstall/', () => {
  it('renders the install objects and the cleanup DaemonSet', () => {
    expect(install.map((d) => d.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'DaemonSet', 'ServiceAccount']);
    expect(uninstall.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual(['DaemonSet/netfence-cleanup']);
  });

  it.each([
    { name: 'deploy/', docs: install },
    { name: 'deploy/uninstall/', docs: uninstall },
  ])('$name runs only on Linux nodes (iptables, ipsets)', ({ docs }) => {
    for (const ds of daemonSets(docs)) expect(podOf(ds).nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
  });

  it.each([
    { name: 'deploy/', docs: install },
    { name: 'deploy/uninstall/', docs: uninstall },
  ])("$name runs the package version's image by default", ({ docs }) => {
    const images = daemonSets(docs).flatMap((ds) => allContainers(podOf(ds)).map((c) => c.image));
    expect(images.length).toBeGreaterThan(0);
    expect(new Set(images)).toEqual(new Set([`netfence:${packageJson.version}`]));
  });

  it('probes the daemon on the node loopback, where its port listens', () => {
    expect(daemonContainer.livenessProbe?.httpGet).toMatchObject({ host: '127.0.0.1', path: '/healthz' });
    expect(daemonContainer.readinessProbe?.httpGet).toMatchObject({ host: '127.0.0.1', path: '/readyz' });
  });

  it('holds liveness back until the first sync is programmed, for longer than the first lists may take', () => {
    const probe = daemonContainer.startupProbe;
    expect(probe?.httpGet).toMatchObject({ host: '127.0.0.1', path: '/startupz' });
    // A WatchList stream may take initialListTimeoutSeconds (120 s) before paged lists begin: ten minutes in all.
    expect((probe?.periodSeconds ?? 10) * (probe?.failureThreshold ?? 3)).toBeGreaterThanOrEqual(600);
  });

  it.each([
    { name: 'the daemon', container: daemonContainer },
    { name: 'cleanup', container: podOf(daemonSets(uninstall)[0]!).initContainers![0]! },
  ])('$name gets NET_ADMIN and NET_RAW only: unprivileged, read-only root, no escalation', ({ container }) => {
    expect(container.securityContext).toMatchObject({ runAsUser: 0, privileged: false, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(container.securityContext.capabilities.drop).toEqual(['ALL']);
    expect([...(container.securityContext.capabilities.add ?? [])].sort()).toEqual(['NET_ADMIN', 'NET_RAW']);
  });

  it.each([
    { name: 'deploy/', docs: install },
    { name: 'deploy/uninstall/', docs: uninstall },
  ])("$name mounts the node's xtables lock, and every mount names a volume", ({ docs }) => {
    for (const ds of daemonSets(docs)) {
      const pod = podOf(ds);
      const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
      for (const container of allContainers(pod)) for (const m of container.volumeMounts ?? []) expect(volumes.has(m.name)).toBe(true);
      const lock = allContainers(pod)
        .flatMap((c) => c.volumeMounts ?? [])
        .find((m) => m.mountPath === '/run/xtables.lock');
      expect(volumes.get(lock?.name ?? '')?.hostPath?.path).toBe('/run/xtables.lock');
    }
  });

  // BENCHMARKS.md: the daemon holds ~115–135 MiB at 10,000 pods (more on Node 24); a request below that lets the
  // scheduler overcommit the node the enforcer must keep running on.
  it('requests at least what the daemon holds at 10,000 pods, and limits above the request', () => {
    const request = mebibytes(daemonContainer.resources?.requests?.['memory']);
    expect(request).toBeGreaterThanOrEqual(135);
    expect(mebibytes(daemonContainer.resources?.limits?.['memory'])).toBeGreaterThan(request);
    expect(daemonContainer.resources?.limits?.['cpu']).toBeUndefined();
  });
});

// The overlays docs/operations.md and the README tell an operator to write (their `cat > … <<'EOF'` blocks, with
// a registry and tag filled in), beside a copy of deploy/: `kubectl kustomize` alone renders them (no kustomize
// binary, which nothing installs), and every container runs the image they name.
describe('an overlay naming the image (README and docs/operations.md "Deploying beside flannel")', () => {
  const IMAGE = 'registry.example.com/ops/netfence:1.2.3';
  const overlays = (doc: string) =>
    [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/^cat > (\S+) <<'EOF'\n([\s\S]*?)^EOF$/gm)].map((m) => ({ path: m[1]!, text: m[2]! }));
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'netfence-overlay-'));
    cpSync(join(ROOT, 'deploy'), join(dir, 'deploy'), { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['README.md', 'docs/operations.md'])('%s: no `kustomize edit`, and its overlays render with the image named', (doc) => {
    expect(readFileSync(join(ROOT, doc), 'utf8')).not.toMatch(/kustomize edit/);
    const found = overlays(doc);
    expect(found.length).toBeGreaterThan(0);
    for (const { path, text } of found) {
      const file = join(dir, doc.replace(/\W/g, '-'), path);
      // Each document's overlays sit beside deploy/ as its example does (`resources: [../deploy]`).
      cpSync(join(dir, 'deploy'), join(dir, doc.replace(/\W/g, '-'), 'deploy'), { recursive: true });
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text.replaceAll('<registry>', 'registry.example.com/ops').replaceAll('<tag>', '1.2.3'));
      const images = daemonSets(render(dirname(file))).flatMap((ds) => allContainers(podOf(ds)).map((c) => c.image));
      expect(images.length).toBeGreaterThan(0);
      expect({ path, images: new Set(images) }).toEqual({ path, images: new Set([IMAGE]) });
    }
  });
});
