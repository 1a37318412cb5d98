import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_FLAG_OPTIONS, ConfigError, loadConfig, toNodeSettings, type LoadConfigInput } from '../../../src/config/load.js';
import { DEFAULT_CONFIG } from '../../../src/config/schema.js';
import { DEFAULT_NODE_BUDGET, defaultDnsLearningSettings, defaultNodeSettings } from '../../../src/model/index.js';

const file = (text: string, path = '/etc/netfence/config.yaml') => ({ path, text });
const flags = (...argv: string[]) => parseArgs({ args: argv, options: CONFIG_FLAG_OPTIONS, strict: true }).values;

function problemsOf(input: LoadConfigInput): readonly string[] {
  try {
    loadConfig(input);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('fills every default when only the node name is given', () => {
    const { config } = loadConfig({ env: { NODE_NAME: 'node-a' } });
    expect(config).toEqual({ ...DEFAULT_CONFIG, nodeName: 'node-a' });
  });

  it.each<{ name: string; input: LoadConfigInput; expect: Record<string, unknown> }>([
    {
      name: 'file overrides defaults',
      input: { env: { NODE_NAME: 'n1' }, file: file('resyncIntervalSeconds: 10\nbackend: nft\n') },
      expect: { resyncIntervalSeconds: 10, backend: 'nft' },
    },
    {
      name: 'JSON file is accepted',
      input: { env: { NODE_NAME: 'n1' }, file: file('{"unknownPods": "fail-open", "ipv6": false}', 'c.json') },
      expect: { unknownPods: 'fail-open', ipv6: false },
    },
    {
      name: 'environment overrides file',
      input: { env: { NODE_NAME: 'n1', NETFENCE_RESYNC_INTERVAL_SECONDS: '5' }, file: file('resyncIntervalSeconds: 10') },
      expect: { resyncIntervalSeconds: 5 },
    },
    {
      name: 'flags override environment',
      input: { env: { NODE_NAME: 'n1', NETFENCE_LOG_LEVEL: 'warn' }, argvFlags: flags('--log-level', 'debug') },
      expect: { logLevel: 'debug' },
    },
    {
      name: 'NETFENCE_NODE_NAME overrides the downward-API NODE_NAME',
      input: { env: { NODE_NAME: 'from-pod', NETFENCE_NODE_NAME: 'override' } },
      expect: { nodeName: 'override' },
    },
    {
      name: '--node-name overrides both',
      input: { env: { NODE_NAME: 'a', NETFENCE_NODE_NAME: 'b' }, argvFlags: flags('--node-name', 'c') },
      expect: { nodeName: 'c' },
    },
    {
      name: 'pod CIDRs: comma list in env, repeated and comma-separated flags',
      input: {
        env: { NODE_NAME: 'n1', NETFENCE_POD_CIDRS: '10.0.0.0/24' },
        argvFlags: flags('--pod-cidr', '10.1.0.0/24,fd00::/64', '--pod-cidr', '10.2.0.0/24'),
      },
      expect: { podCidrs: ['10.1.0.0/24', 'fd00::/64', '10.2.0.0/24'] },
    },
    {
      name: 'mark mask as hex string in file',
      input: { env: { NODE_NAME: 'n1' }, file: file('markMask: "0x00ff0000"') },
      expect: { markMask: 0x00ff0000 },
    },
    {
      name: 'mark mask as number in file',
      input: { env: { NODE_NAME: 'n1' }, file: file('markMask: 0xf000000') },
      expect: { markMask: 0xf000000 },
    },
    {
      name: 'boolean from env words',
      input: { env: { NODE_NAME: 'n1', NETFENCE_CONNTRACK_FLUSH: 'yes', NETFENCE_IPV6: 'false' } },
      expect: { conntrackFlush: true, ipv6: false },
    },
    {
      name: '--no-ipv6 turns off what the file turned on',
      input: { env: { NODE_NAME: 'n1' }, file: file('ipv6: true'), argvFlags: flags('--no-ipv6') },
      expect: { ipv6: false },
    },
    {
      name: '--revoke-established turns strict mode on',
      input: { env: { NODE_NAME: 'n1' }, argvFlags: flags('--revoke-established') },
      expect: { revokeEstablished: true },
    },
    {
      name: '--dry-run',
      input: { env: { NODE_NAME: 'n1' }, argvFlags: flags('--dry-run') },
      expect: { dryRun: true },
    },
    {
      name: 'empty env variables count as unset',
      input: { env: { NODE_NAME: 'n1', NETFENCE_BRIDGE: '' } },
      expect: { bridge: 'cni0' },
    },
    {
      name: 'an empty file sets nothing',
      input: { env: { NODE_NAME: 'n1' }, file: file('# nothing here\n') },
      expect: { bridge: 'cni0', resyncIntervalSeconds: 30 },
    },
    {
      name: 'flag keys that are not config (kubeconfig) are ignored',
      input: { env: { NODE_NAME: 'n1' }, argvFlags: { kubeconfig: '/k', resources: ['a.yaml'] } },
      expect: { nodeName: 'n1' },
    },
  ])('$name', ({ input, expect: expected }) => {
    expect(loadConfig(input).config).toMatchObject(expected);
  });

  it.each<{ name: string; input: LoadConfigInput; problems: string[] }>([
    {
      name: 'range error in the file names file and JSON path',
      input: { env: { NODE_NAME: 'n1' }, file: file('resyncIntervalSeconds: 0') },
      problems: ['config file /etc/netfence/config.yaml: /resyncIntervalSeconds: must be >= 1'],
    },
    {
      name: 'unknown key with a suggestion',
      input: { env: { NODE_NAME: 'n1' }, file: file('resyncIntervalSecond: 5') },
      problems: ['config file /etc/netfence/config.yaml: /resyncIntervalSecond: unknown key (did you mean resyncIntervalSeconds?)'],
    },
    {
      name: 'every error is reported, not just the first',
      input: { env: { NODE_NAME: 'n1' }, file: file('bridge: ""\nbackend: iptables\nchainPrefix: toolong-\nipsetPrefix: "nf:"\n') },
      problems: [
        'config file /etc/netfence/config.yaml: /bridge: must NOT have fewer than 1 characters',
        'config file /etc/netfence/config.yaml: /chainPrefix: must NOT have more than 6 characters',
        'config file /etc/netfence/config.yaml: /ipsetPrefix: must be letters and digits only',
        'config file /etc/netfence/config.yaml: /backend: must be one of: auto, nft, legacy',
      ],
    },
    {
      name: 'bad CIDRs (v4 and v6) by index',
      input: { env: { NODE_NAME: 'n1' }, file: file('podCidrs: ["10.0.0.0/33", "fd00::/64", "fd00::zz/64", "10.1/16"]') },
      problems: [
        'config file /etc/netfence/config.yaml: /podCidrs/0: must be a CIDR such as 10.244.1.0/24 or fd00:10:244:1::/64',
        'config file /etc/netfence/config.yaml: /podCidrs/2: must be a CIDR such as 10.244.1.0/24 or fd00:10:244:1::/64',
        'config file /etc/netfence/config.yaml: /podCidrs/3: must be a CIDR such as 10.244.1.0/24 or fd00:10:244:1::/64',
      ],
    },
    {
      name: 'mark mask overlapping kube-proxy',
      input: { env: { NODE_NAME: 'n1' }, file: file('markMask: "0xffff"') },
      problems: ["config file /etc/netfence/config.yaml: /markMask: must not overlap kube-proxy's mark bits 0xc000 (overlap 0xc000)"],
    },
    {
      name: 'mark mask with too few bits, from the environment',
      input: { env: { NODE_NAME: 'n1', NETFENCE_MARK_MASK: '0x70000' } },
      problems: ['environment NETFENCE_MARK_MASK: /markMask: must have at least 4 bits set (has 3): accept, pass and two scratch bits'],
    },
    {
      name: 'mark mask that is not a number',
      input: { env: { NODE_NAME: 'n1' }, argvFlags: flags('--mark-mask', 'lots') },
      problems: ['flag --mark-mask: /markMask: must be a number or a hex string such as "0xffff0000"'],
    },
    {
      name: 'non-integer from env names the variable',
      input: { env: { NODE_NAME: 'n1', NETFENCE_BATCH_WINDOW_MS: 'soon' } },
      problems: ['environment NETFENCE_BATCH_WINDOW_MS: /batchWindowMs: must be integer'],
    },
    {
      name: 'non-boolean from flag value',
      input: { env: { NODE_NAME: 'n1' }, argvFlags: { 'conntrack-flush': 'maybe' } },
      problems: ['flag --conntrack-flush: /conntrackFlush: must be boolean'],
    },
    {
      name: 'strict mode needs a fifth mark bit for its conntrack mark',
      input: { env: { NODE_NAME: 'n1', NETFENCE_REVOKE_ESTABLISHED: 'true' }, file: file('markMask: "0x000f0000"') },
      problems: ['/markMask: revokeEstablished needs a fifth bit in the mark mask 0xf0000 for its conntrack mark'],
    },
    {
      name: 'unknown NETFENCE_ variable',
      input: { env: { NODE_NAME: 'n1', NETFENCE_LOGLEVEL: 'debug' } },
      problems: ['environment NETFENCE_LOGLEVEL: unknown setting (did you mean NETFENCE_LOG_LEVEL?)'],
    },
    {
      name: 'bad listen address',
      input: { env: { NODE_NAME: 'n1' }, file: file('listenAddress: "9476"') },
      problems: ['config file /etc/netfence/config.yaml: /listenAddress: must be host:port such as 0.0.0.0:9476 or [::]:9476'],
    },
    {
      name: 'node name must be a DNS subdomain',
      input: { argvFlags: flags('--node-name', 'Node_1') },
      problems: ['flag --node-name: /nodeName: must be a DNS subdomain (lowercase letters, digits, "-" and ".")'],
    },
    {
      name: 'node name is required',
      input: { env: {} },
      problems: ['/nodeName: is required (set --node-name, NODE_NAME, or nodeName in the config file)'],
    },
    {
      name: 'YAML syntax error names the line',
      input: { env: { NODE_NAME: 'n1' }, file: file('bridge: cni0\n\tbackend: nft\n') },
      problems: ['config file /etc/netfence/config.yaml: line 2: Tabs are not allowed as indentation'],
    },
    {
      name: 'duplicate keys are an error',
      input: { env: { NODE_NAME: 'n1' }, file: file('bridge: a\nbridge: b\n') },
      problems: [expect.stringMatching(/^config file \/etc\/netfence\/config.yaml: line 2: .*unique/i) as unknown as string],
    },
    {
      name: 'top level must be a mapping',
      input: { env: { NODE_NAME: 'n1' }, file: file('- bridge: cni0\n') },
      problems: ['config file /etc/netfence/config.yaml: /: must be a mapping of settings'],
    },
    {
      name: '--ipv6 and --no-ipv6 together',
      input: { env: { NODE_NAME: 'n1' }, argvFlags: flags('--ipv6', '--no-ipv6') },
      problems: ['flag --ipv6: conflicts with --no-ipv6'],
    },
    {
      name: 'missing config file',
      input: { env: { NODE_NAME: 'n1', NETFENCE_CONFIG: '/nonexistent/netfence.yaml' } },
      problems: [expect.stringMatching(/^config file \/nonexistent\/netfence.yaml: cannot read: .*ENOENT/) as unknown as string],
    },
  ])('rejects: $name', ({ input, problems }) => {
    expect(problemsOf(input)).toEqual(problems);
  });

  it('puts every problem in the error message', () => {
    expect(() => loadConfig({ env: { NODE_NAME: 'n1' }, file: file('ipv6: 1\nbogus: 2') })).toThrow(
      'invalid configuration:\n  config file /etc/netfence/config.yaml: /bogus: unknown key\n  config file /etc/netfence/config.yaml: /ipv6: must be boolean',
    );
  });

  it('does not require a node name when asked not to', () => {
    expect(loadConfig({ env: {}, requireNodeName: false }).config.nodeName).toBe('');
  });

  it('reads the file named by --config', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nf-config-'));
    try {
      const path = join(dir, 'config.yaml');
      writeFileSync(path, 'bridge: br0\n');
      expect(loadConfig({ env: { NODE_NAME: 'n1' }, argvFlags: flags('--config', path) }).config.bridge).toBe('br0');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('toNodeSettings', () => {
  const base = loadConfig({ env: { NODE_NAME: 'node-a' } }).config;

  it('matches the model defaults for a default config', () => {
    expect(toNodeSettings(base, ['10.244.1.0/24'])).toEqual(defaultNodeSettings('node-a', ['10.244.1.0/24']));
  });

  it.each<{ name: string; chosen: string[]; expect: string[] }>([
    { name: 'kept in order', chosen: ['10.244.1.0/24', 'fd00:10:244:1::/64'], expect: ['10.244.1.0/24', 'fd00:10:244:1::/64'] },
    { name: 'host bits cleared and duplicates dropped', chosen: ['10.244.1.1/24', '10.244.1.0/24'], expect: ['10.244.1.0/24'] },
    { name: 'v6 canonical form', chosen: ['FD00:0:0:0::1/64'], expect: ['fd00::/64'] },
  ])('pod CIDRs: $name', ({ chosen, expect: expected }) => {
    expect(toNodeSettings(base, chosen).podCidrs).toEqual(expected);
  });

  it('carries the other settings through', () => {
    const { config } = loadConfig({
      env: { NODE_NAME: 'node-b' },
      file: file('bridge: br-pods\nunknownPods: fail-open\nchainPrefix: xy-\nipsetPrefix: xy\nmarkMask: "0x0f000000"'),
    });
    expect(toNodeSettings(config, [])).toEqual({
      nodeName: 'node-b',
      bridge: 'br-pods',
      budget: DEFAULT_NODE_BUDGET,
      podCidrs: [],
      unknownPods: 'fail-open',
      chainPrefix: 'xy-',
      ipsetPrefix: 'xy',
      marks: { accept: 0x1000000, pass: 0x2000000, scratch0: 0x4000000, all: 0xf000000 },
      flowLog: { group: 9476, perSecond: 10, burst: 5 },
      dnsEgress: defaultDnsLearningSettings,
    });
  });

  it('reads the dnsEgress keys, and refuses a minimum TTL above the maximum or the flow-log group', () => {
    const { config } = loadConfig({
      env: { NODE_NAME: 'n', NETFENCE_DNS_EGRESS_QUEUE_NUM: '7' },
      file: file('dnsEgressMinTtlSeconds: 5\ndnsEgressPerSetMax: 100'),
      argvFlags: flags('--dns-egress-nflog-group', '8'),
    });
    expect(toNodeSettings(config, []).dnsEgress).toEqual({
      ...defaultDnsLearningSettings,
      queueNum: 7,
      nflogGroup: 8,
      minTtlSeconds: 5,
      perSetMax: 100,
    });
    expect(() => toNodeSettings({ ...config, dnsEgressMinTtlSeconds: 90, dnsEgressMaxTtlSeconds: 60 }, [])).toThrow(
      /dnsEgressMinTtlSeconds/,
    );
    expect(() => toNodeSettings({ ...config, dnsEgressNflogGroup: config.flowLogGroup }, [])).toThrow(
      /dnsEgressNflogGroup: .*flow-log group/,
    );
    expect(() => loadConfig({ env: { NODE_NAME: 'n' }, argvFlags: flags('--dns-egress-per-set-max', '0') })).toThrow(
      /dnsEgressPerSetMax|dns-egress-per-set-max/,
    );
  });

  it('strict mode takes the fifth bit of the mask as its conntrack mark', () => {
    expect(toNodeSettings({ ...base, revokeEstablished: true }, []).revokeMark).toBe(0x100000);
    expect(toNodeSettings({ ...base, revokeEstablished: true, markMask: 0x0f800000 }, []).revokeMark).toBe(0x8000000);
    expect(toNodeSettings(base, [])).not.toHaveProperty('revokeMark');
  });

  it('turns the flow-log rules off, or moves them to another group and rate', () => {
    const off = loadConfig({ env: { NODE_NAME: 'n' }, argvFlags: flags('--no-flow-logs') }).config;
    expect(toNodeSettings(off, []).flowLog).toBeUndefined();
    const moved = loadConfig({ env: { NODE_NAME: 'n', NETFENCE_FLOW_LOG_GROUP: '7' }, argvFlags: flags('--flow-log-rate', '100') }).config;
    expect(toNodeSettings(moved, []).flowLog).toEqual({ group: 7, perSecond: 100, burst: 5 });
    expect(() => loadConfig({ env: { NODE_NAME: 'n' }, argvFlags: flags('--flow-log-group', '70000') })).toThrow(
      /flowLogGroup|flow-log-group/,
    );
    const allowed = loadConfig({ env: { NODE_NAME: 'n' }, argvFlags: flags('--flow-log-allowed') }).config;
    expect(toNodeSettings(allowed, []).flowLog).toEqual({ group: 9476, perSecond: 10, burst: 5, allowed: true });
  });
});
