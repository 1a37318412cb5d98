import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../../src/config/load.js';
import { parseListenAddress } from '../../../src/config/listen-address.js';
import { schemaProblems } from './k8s-schema.js';

// Field shapes the assertions below read; the schemas above vouch for the rest.
interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface Container {
  image: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string | number } };
  readinessProbe: { httpGet: { path: string; port: string | number } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: { privileged: boolean; capabilities: { add: string[]; drop?: string[] } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  serviceAccountName: string;
  hostNetwork: boolean;
  dnsPolicy: string;
  priorityClassName: string;
  tolerations: Record<string, unknown>[];
  containers: Container[];
  volumes: { name: string; hostPath?: { path: string; type?: string }; configMap?: { name: string } }[];
}

const DEPLOY = join(process.cwd(), 'deploy');
const kustomization = parseAllDocuments(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8'))[0]?.toJS() as {
  apiVersion: string;
  kind: string;
  resources: string[];
};
const docs: { file: string; doc: Doc }[] = kustomization.resources.flatMap((file) =>
  parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`);
    return { file, doc: d.toJS() as Doc };
  }),
);
const one = (kind: string): Doc => {
  const found = docs.filter(({ doc }) => doc.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0]!.doc;
};
const daemonSet = one('DaemonSet') as Doc & { spec: { selector: { matchLabels: Record<string, string> }; updateStrategy: { type: string }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };
const pod = daemonSet.spec.template.spec;
const container = pod.containers[0]!;
const configMap = one('ConfigMap') as Doc & { data: Record<string, string> };
const clusterRole = one('ClusterRole') as Doc & { rules: Rule[] };
const binding = one('ClusterRoleBinding') as Doc & { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace: string }[] };
const serviceAccount = one('ServiceAccount');

describe('deploy/kustomization.yaml', () => {
  it('is a Kustomization listing every manifest in deploy/, each existing', () => {
    expect(kustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
    for (const file of kustomization.resources) expect(existsSync(join(DEPLOY, file))).toBe(true);
    const manifests = readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(manifests.sort());
  });
});

describe('schemas', () => {
  it.each(docs.map(({ file, doc }) => ({ name: `${file}: ${doc.kind} ${doc.metadata.name}`, doc })))('$name is valid', ({ doc }) => {
    expect(schemaProblems(doc)).toEqual([]);
  });

  // The validator must be able to fail, or the test above proves nothing.
  it.each<{ name: string; mutate: (d: Doc) => void; problem: RegExp }>([
    { name: 'misspelt pod field', mutate: (d) => ((d['spec'] as { template: { spec: Record<string, unknown> } }).template.spec['hostNetwrok'] = true), problem: /spec\.template\.spec\.hostNetwrok: unknown field/ },
    { name: 'misspelt mount field', mutate: (d) => (podOf(d).containers[0]!.volumeMounts[0]! as Record<string, unknown>)['readonly'] = true, problem: /volumeMounts\[0\]\.readonly: unknown field/ },
    { name: 'port as a string', mutate: (d) => ((podOf(d).containers[0]!.ports[0]! as Record<string, unknown>)['containerPort'] = '9476'), problem: /containerPort must be integer/ },
    { name: 'missing selector', mutate: (d) => delete (d['spec'] as Record<string, unknown>)['selector'], problem: /data\/spec must have required property selector/ },
    { name: 'bad quantity', mutate: (d) => (podOf(d).containers[0]!.resources.requests = { cpu: 'lots' }), problem: /resources\/requests\/cpu must match format/ },
  ])('flags a broken DaemonSet: $name', ({ mutate, problem }) => {
    const copy = structuredClone(daemonSet) as Doc;
    mutate(copy);
    expect(schemaProblems(copy).join('\n')).toMatch(problem);
  });
});

function podOf(d: Doc): PodSpec {
  return (d['spec'] as { template: { spec: PodSpec } }).template.spec;
}

describe('RBAC', () => {
  it('grants exactly list/watch on pods, namespaces, nodes, networkpolicies and clusternetworkpolicies, and create/patch on events.k8s.io events', () => {
    const grants = clusterRole.rules.flatMap((rule) => {
      expect(rule.resourceNames).toBeUndefined();
      return rule.apiGroups.flatMap((group) => rule.resources.map((resource) => `${group}/${resource} ${[...rule.verbs].sort().join(',')}`));
    });
    expect(grants.sort()).toEqual([
      '/namespaces list,watch',
      '/nodes list,watch',
      '/pods list,watch',
      'events.k8s.io/events create,patch',
      'networking.k8s.io/networkpolicies list,watch',
      'policy.networking.k8s.io/clusternetworkpolicies list,watch',
    ]);
  });

  it('binds the ClusterRole to the DaemonSet service account', () => {
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole.metadata.name });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: serviceAccount.metadata.name, namespace: serviceAccount.metadata.namespace }]);
    expect(pod.serviceAccountName).toBe(serviceAccount.metadata.name);
  });

  it('puts namespaced objects in kube-system', () => {
    for (const doc of [daemonSet, configMap, serviceAccount]) expect(doc.metadata.namespace).toBe('kube-system');
  });
});

describe('DaemonSet', () => {
  const mount = (path: string) => container.volumeMounts.find((m) => m.mountPath === path);
  const volume = (name: string | undefined) => pod.volumes.find((v) => v.name === name);
  const portNumber = (port: string | number) => (typeof port === 'number' ? port : container.ports.find((p) => p.name === port)?.containerPort);

  it('runs on the host network of every node, before other workloads', () => {
    expect(pod).toMatchObject({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet', priorityClassName: 'system-node-critical' });
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(daemonSet.spec.updateStrategy.type).toBe('RollingUpdate');
    expect(daemonSet.spec.template.metadata.labels).toMatchObject(daemonSet.spec.selector.matchLabels);
  });

  it('has NET_ADMIN and NET_RAW but is not privileged', () => {
    expect(container.securityContext.privileged).toBe(false);
    expect([...container.securityContext.capabilities.add].sort()).toEqual(['NET_ADMIN', 'NET_RAW']);
  });

  it('runs the package version of the image with the config file named in the environment', () => {
    // The tag comes from kustomization.yaml `images:` (test/unit/deploy/kustomize.test.ts renders it).
    expect(container.image).toBe('netfence');
    expect(container.args).toEqual(['daemon']);
    // By env, so that `kubectl exec ds/netfence -- netfence diff` reads the same file as the daemon.
    expect(container.env).toContainEqual({ name: 'NETFENCE_CONFIG', value: '/etc/netfence/config.yaml' });
    expect(container.resources.requests).toBeDefined();
    expect(container.resources.limits).toBeDefined();
  });

  it('takes NODE_NAME from the downward API', () => {
    expect(container.env).toContainEqual({ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } });
  });

  it.each([
    { path: '/run/xtables.lock', hostPath: '/run/xtables.lock', type: 'FileOrCreate', readOnly: undefined },
    { path: '/run/flannel', hostPath: '/run/flannel', type: 'DirectoryOrCreate', readOnly: true },
    { path: '/lib/modules', hostPath: '/lib/modules', type: undefined, readOnly: true },
    { path: '/var/lib/cni', hostPath: '/var/lib/cni', type: 'DirectoryOrCreate', readOnly: true },
  ])('mounts host $path', ({ path, hostPath, type, readOnly }) => {
    const m = mount(path);
    expect(m?.readOnly).toBe(readOnly);
    expect(volume(m?.name)?.hostPath).toEqual(type === undefined ? { path: hostPath } : { path: hostPath, type });
  });

  describe('with the ConfigMap', () => {
    const configMount = mount('/etc/netfence');
    const configPath = container.env.find((e) => e.name === 'NETFENCE_CONFIG')?.value ?? '';
    const configKey = configPath.slice('/etc/netfence/'.length);
    const config = loadConfig({ env: { NODE_NAME: 'node-1' }, file: { path: configPath, text: configMap.data[configKey] ?? '' } }).config;

    it('mounts the ConfigMap where NETFENCE_CONFIG points', () => {
      expect(configMount?.readOnly).toBe(true);
      expect(volume(configMount?.name)?.configMap?.name).toBe(configMap.metadata.name);
      expect(Object.keys(configMap.data)).toEqual([configKey]);
    });

    it('holds a config the daemon accepts, with the documented defaults', () => {
      expect(config).toMatchObject({ nodeName: 'node-1', unknownPods: 'fail-closed', markMask: 0xffff0000, chainPrefix: 'nf-' });
    });

    it('probes /healthz and /readyz on the port the daemon listens on', () => {
      const listenPort = parseListenAddress(config.listenAddress)?.port;
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(portNumber(container.livenessProbe.httpGet.port)).toBe(listenPort);
      expect(portNumber(container.readinessProbe.httpGet.port)).toBe(listenPort);
    });

    it('reads flannel subnet.env from inside the read-only flannel mount', () => {
      expect(config.flannelSubnetEnv.startsWith('/run/flannel/')).toBe(true);
    });
  });
});

describe('deploy/uninstall (docs/operations.md "Uninstall")', () => {
  const UNINSTALL = join(DEPLOY, 'uninstall');
  const uk = parseAllDocuments(readFileSync(join(UNINSTALL, 'kustomization.yaml'), 'utf8'))[0]?.toJS() as { kind: string; resources: string[] };
  const udocs = uk.resources.flatMap((file) => parseAllDocuments(readFileSync(join(UNINSTALL, file), 'utf8')).map((d) => d.toJS() as Doc));
  const cleanup = udocs.find((d) => d.kind === 'DaemonSet') as Doc & { spec: { template: { spec: PodSpec & { initContainers: Container[] } } } };
  const cpod = cleanup.spec.template.spec;

  it('is a valid Kustomization of valid objects', () => {
    expect(uk.kind).toBe('Kustomization');
    for (const d of udocs) expect(schemaProblems(d)).toEqual([]);
  });

  it('runs `netfence cleanup` once per node, on every node, with the prefixes the daemon uses', () => {
    expect(cpod).toMatchObject({ hostNetwork: true, priorityClassName: 'system-node-critical' });
    expect(cpod.tolerations).toEqual(pod.tolerations);
    const [init] = cpod.initContainers;
    expect(init?.image).toBe(container.image);
    const args = init!.args;
    expect(args[0]).toBe('cleanup');
    const config = configMap.data['config.yaml']!;
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect(config).toContain(`chainPrefix: ${flag('--chain-prefix')}\n`);
    expect(config).toContain(`ipsetPrefix: ${flag('--ipset-prefix')}\n`);
    expect([...init!.securityContext.capabilities.add].sort()).toEqual(['NET_ADMIN', 'NET_RAW']);
    expect(init!.volumeMounts.map((m) => m.mountPath)).toContain('/run/xtables.lock');
  });
});
