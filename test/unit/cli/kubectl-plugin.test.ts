// `kubectl netfence …` → the netfence command line: kubectl's -n/--namespace (bare pod names), --context,
// --kubeconfig, $KUBECONFIG and ~/.kube/config, as kubectl itself reads them.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { COMMANDS, type CommandName } from '../../../src/cli/command-specs.js';
import { commandHelp } from '../../../src/cli/help.js';
import { PLUGIN_COMMANDS, pluginArgv, pluginHelp, pluginMain, type PluginEnv } from '../../../src/cli/kubectl-plugin.js';

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
      name: '--help passes through (the plugin answers it)',
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

async function plugin(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await pluginMain(argv, { out: (t) => void (out += t), err: (t) => void (err += t) }, env({ exists: () => false }), 80);
  return { code, out, err };
}

describe('kubectl netfence: the commands it offers', () => {
  const offered = ['why', 'drops', 'map'];
  const nodeOnly = (Object.keys(COMMANDS) as CommandName[]).filter((c) => !offered.includes(c));

  it('offers exactly the commands that answer through the API server', () => {
    expect(Object.keys(PLUGIN_COMMANDS).sort()).toEqual([...offered].sort());
  });

  it.each(nodeOnly)('refuses %s in one line, saying where it runs instead, exit 2', async (name) => {
    const r = await plugin(name, '-n', 'shop');
    expect(r).toEqual({
      code: 2,
      out: '',
      err: `kubectl netfence: ${name} is not offered through kubectl: it works on the kernel of the machine it runs on, not through the API server; run \`netfence ${name}\` on the node (kubectl netfence offers: why, drops, map)\n`,
    });
  });

  it('a mistyped command gets "did you mean"', async () => {
    expect((await plugin('dorps')).err).toBe(
      'kubectl netfence: unknown command "dorps" (did you mean drops?); kubectl netfence offers: why, drops, map\n',
    );
  });

  it("--help prints the plugin's own help: its commands and the kubectl flags it reads", async () => {
    const r = await plugin('--help');
    expect(r).toEqual({ code: 0, out: pluginHelp(80), err: '' });
    expect(r.out).toMatch(/^usage: kubectl netfence <command>/);
    expect(r.out).toMatch(/^ {2}why /m);
    expect(r.out).toMatch(/^ {2}drops /m);
    expect(r.out).toMatch(/^ {2}-n, --namespace NS /m);
    for (const name of nodeOnly) expect(r.out).not.toMatch(new RegExp(`^ {2}${name} `, 'm'));
  });

  it("<command> --help is that command's help, under the plugin's name", async () => {
    expect(await plugin('why', '--help')).toEqual({ code: 0, out: commandHelp('why', 80, 'kubectl netfence'), err: '' });
    expect(await plugin('help', 'drops')).toEqual({ code: 0, out: commandHelp('drops', 80, 'kubectl netfence'), err: '' });
  });

  it('the built plugin answers --help with its own help', () => {
    const out = execFileSync(process.execPath, [join(process.cwd(), 'dist/cli/kubectl-plugin.js'), '--help'], {
      encoding: 'utf8',
      env: { ...process.env, COLUMNS: '80' },
    });
    expect(out).toMatch(/^usage: kubectl netfence <command>/);
  });
});
