// `kubectl netfence …` → the netfence command line: kubectl's -n/--namespace (bare pod names), --context,
// --kubeconfig, $KUBECONFIG and ~/.kube/config, as kubectl itself reads them.

import { pluginArgv, type PluginEnv } from '../../../src/cli/kubectl-plugin.js';

const env = (over: Partial<PluginEnv> = {}): PluginEnv => ({
  env: {},
  home: '/home/op',
  exists: (p) => p === '/home/op/.kube/config',
  contextNamespace: () => undefined,
  ...over,
});

describe('kubectl netfence: argument mapping', () => {
  it.each<{ name: string; argv: string[]; penv?: Partial<PluginEnv>; want: string[] }>([
    {
      name: 'why: -n names the namespace of bare pod names; ~/.kube/config is the default kubeconfig',
      argv: ['why', '-n', 'shop', '--src', 'web', '--dst', 'db:5432'],
      want: ['why', '--src', 'shop/web', '--dst', 'shop/db:5432', '--kubeconfig', '/home/op/.kube/config'],
    },
    {
      name: 'why: ns/pod and addresses are kept; --namespace=, --context and --kubeconfig= forms',
      argv: ['why', '--src=ops/probe', '--dst', '10.244.2.5:80', '--namespace=shop', '--context', 'prod', '--kubeconfig=/k/c'],
      want: ['why', '--src=ops/probe', '--dst', '10.244.2.5:80', '--kubeconfig', '/k/c', '--context', 'prod'],
    },
    {
      name: "why: without -n, the context's namespace, then default",
      argv: ['why', '--src', 'web', '--dst', 'fd00::5', '--port', '80'],
      penv: { contextNamespace: (k, c) => (k === '/home/op/.kube/config' && c === undefined ? 'team-a' : undefined) },
      want: ['why', '--src', 'team-a/web', '--dst', 'fd00::5', '--port', '80', '--kubeconfig', '/home/op/.kube/config'],
    },
    {
      name: 'why: $KUBECONFIG (a list, kubectl merges it) when no --kubeconfig; default namespace "default"',
      argv: ['why', '--src', 'web', '--dst', 'db', '--port', '5432'],
      penv: { env: { KUBECONFIG: '/a:/b' } },
      want: ['why', '--src', 'default/web', '--dst', 'default/db', '--port', '5432', '--kubeconfig', '/a:/b'],
    },
    {
      name: 'drops: --pod gets the namespace; the API is the kubeconfig',
      argv: ['drops', '--pod', 'db', '-n', 'shop', '--json'],
      want: ['drops', '--pod', 'shop/db', '--json', '--kubeconfig', '/home/op/.kube/config'],
    },
    {
      name: 'drops: -n alone filters by that namespace',
      argv: ['drops', '-n', 'shop'],
      want: ['drops', '--namespace', 'shop', '--kubeconfig', '/home/op/.kube/config'],
    },
    {
      name: 'no kubeconfig anywhere: none passed (in-cluster configuration)',
      argv: ['why', '--src', 'a/b', '--dst', 'a/c', '--port', '1'],
      penv: { exists: () => false },
      want: ['why', '--src', 'a/b', '--dst', 'a/c', '--port', '1'],
    },
    {
      name: 'other commands and --help pass through',
      argv: ['--help'],
      want: ['--help'],
    },
  ])('$name', ({ argv, penv, want }) => {
    expect(pluginArgv(argv, env(penv))).toEqual(want);
  });

  it('a kubectl flag without its value is an error', () => {
    expect(() => pluginArgv(['why', '-n'], env())).toThrow('-n needs a value');
  });
});
