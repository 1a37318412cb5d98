// The DNS agent with real packets: pods in their own namespaces routed through a node namespace whose FORWARD
// chain holds DNS answers to the subject pods on an NFQUEUE (`--ctstate ESTABLISHED --ctdir REPLY`,
// `--queue-bypass`), copies their queries to an NFLOG group, and allows each subject pod to port 80 only of the
// addresses in its learned sets, written here by hand as the compiler writes them (hash:ip timeout comment). The
// agent is the daemon's (src/daemon/dns-egress.ts) following a hand-written plan, its socket inside the node
// namespace. A DNS server pod answers over UDP and TCP, both families; a web pod owns every target address.

import { jest } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { createDnsEgress, type DnsEgress } from '../../src/daemon/dns-egress.js';
import { startJsonLineProcess, type JsonLineProcess, type JsonObject } from '../../src/dataplane/process.js';
import { nullLogger } from '../../src/log.js';
import { defaultDnsLearningSettings, type DnsLearnedSet, type DnsLearningPlan } from '../../src/model/dns-egress.js';
import { createMetrics, type Metrics } from '../../src/observe/metrics.js';
import { waitUntil } from '../helpers/daemon-harness.js';
import { createNetns, describeKernel, type Netns } from '../helpers/netns.js';

jest.setTimeout(120_000);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const QUEUE = 4100;
const GROUP = 4101;

/** Pod name → its index: 10.61.<i>.2 and fd61:<i>::2, the node end .1 / ::1. */
const PODS = { a: 1, b: 2, dns: 3, web: 4, forger: 5 } as const;
type PodName = keyof typeof PODS;
const v4 = (p: PodName): string => `10.61.${PODS[p]}.2`;
const v6 = (p: PodName): string => `fd61:${PODS[p]}::2`;
/** The web pod owns 10.200.0.0/21 and 2001:db8:100::/64 (AnyIP on its loopback). */
const target = (i: number): string => `10.200.${i >> 8}.${i & 255}`;

const learnedSet = (setName: string, pod: 'a' | 'b', family: 4 | 6, domainNames: string[]): DnsLearnedSet => ({
  setName,
  family,
  pod: `x/${pod}`,
  podAddress: family === 4 ? v4(pod) : v6(pod),
  policy: 'egress-by-name',
  ruleIndex: 0,
  domainNames,
});
const SETS: DnsLearnedSet[] = [
  learnedSet('la4', 'a', 4, [
    'good.example',
    '*.wild.example',
    'shop.example',
    'sneaky.example',
    'short.example',
    'late.example',
    'tcp.example',
  ]),
  learnedSet('la6', 'a', 6, ['good.example', 'tcp6.example']),
  learnedSet('lb4', 'b', 4, ['good.example']),
  learnedSet('lfull4', 'a', 4, ['many.example']),
];
const planWith = (settings: Partial<DnsLearningPlan['settings']> = {}): DnsLearningPlan => ({
  settings: { ...defaultDnsLearningSettings, queueNum: QUEUE, nflogGroup: GROUP, minTtlSeconds: 1, ...settings },
  sets: SETS,
});

const A = (value: string, ttl = 300) => ({ type: 'A', value, ttl });
const RECORDS: Record<string, unknown[]> = {
  'good.example': [A(target(10)), { type: 'AAAA', value: '2001:db8:100::10', ttl: 300 }],
  'shop.example': [{ type: 'CNAME', value: 'edge.cdn.example', ttl: 300 }],
  'edge.cdn.example': [A(target(20))],
  'sneaky.example': [A(target(30))],
  'short.example': [A(target(40), 1)],
  'late.example': [A(target(50))],
  'tcp.example': [A(target(60))],
  'tcp6.example': [{ type: 'AAAA', value: '2001:db8:100::60', ttl: 300 }],
  'other.example': [A(target(70))],
  'many.example': [1, 2, 3, 4, 5].map((i) => A(target(100 + i))),
  ...Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`n${i}.wild.example`, [A(target(256 + i))]])),
};

describeKernel('the DNS agent learns addresses from each pod’s own answers, by packets', () => {
  let node: Netns;
  const pods = {} as Record<PodName, Netns>;
  const peers = {} as Record<PodName, JsonLineProcess>;
  let agent: DnsEgress;
  let metrics: Metrics;

  const ask = (p: PodName, msg: JsonObject, timeoutMs = 30_000): Promise<JsonObject> => peers[p].request(msg, timeoutMs);
  const lookupConnect = (p: PodName, name: string, extra: JsonObject = {}): Promise<JsonObject> =>
    ask(p, { op: 'lookup-connect', server: v4('dns'), name, port: 80, count: 1, timeoutMs: 1000, ...extra }, 120_000);
  const connect = async (p: PodName, ip: string): Promise<boolean> =>
    (await ask(p, { op: 'connect', ip, port: 80, timeoutMs: 300 }))['ok'] === true;
  const metric = async (name: string): Promise<number> => {
    const text = await metrics.render();
    const line = text.split('\n').find((l) => l.startsWith(name));
    return line ? Number(line.split(' ').at(-1)) : NaN;
  };

  beforeAll(async () => {
    node = await createNetns('nft-dnsn');
    await node.exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
    for (const p of Object.keys(PODS) as PodName[]) {
      const ns = (pods[p] = await createNetns('nft-dnsp'));
      const i = PODS[p];
      const veth = `vd${i}${Math.random().toString(16).slice(2, 7)}`;
      await node.exec('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.name]);
      await node.exec('ip', ['addr', 'add', `10.61.${i}.1/24`, 'dev', veth]);
      await node.exec('ip', ['addr', 'add', `fd61:${i}::1/64`, 'dev', veth, 'nodad']);
      await node.exec('ip', ['link', 'set', veth, 'up']);
      await ns.exec('ip', ['addr', 'add', `${v4(p)}/24`, 'dev', 'eth0']);
      await ns.exec('ip', ['addr', 'add', `${v6(p)}/64`, 'dev', 'eth0', 'nodad']);
      await ns.exec('ip', ['link', 'set', 'eth0', 'up']);
      await ns.exec('ip', ['link', 'set', 'lo', 'up']);
      await ns.exec('ip', ['route', 'add', 'default', 'via', `10.61.${i}.1`]);
      await ns.exec('ip', ['-6', 'route', 'add', 'default', 'via', `fd61:${i}::1`]);
    }
    await pods.web.exec('ip', ['route', 'add', 'local', '10.200.0.0/21', 'dev', 'lo']);
    await pods.web.exec('ip', ['-6', 'route', 'add', 'local', '2001:db8:100::/64', 'dev', 'lo']);
    await node.exec('ip', ['route', 'add', '10.200.0.0/21', 'via', v4('web')]);
    await node.exec('ip', ['-6', 'route', 'add', '2001:db8:100::/64', 'via', v6('web')]);

    // The learned sets as the compiler creates them, and the node's FORWARD chain in both families.
    for (const [name, family, maxelem] of [
      ['la4', 'inet', 4096],
      ['la6', 'inet6', 4096],
      ['lb4', 'inet', 4096],
      ['lb6', 'inet6', 4096],
      ['lfull4', 'inet', 3],
    ] as const)
      await node.exec('ipset', ['create', name, 'hash:ip', 'family', family, 'timeout', '30', 'maxelem', String(maxelem), 'comment']);
    for (const [tool, fam, la, lb] of [
      ['iptables', 4, 'la4', 'lb4'],
      ['ip6tables', 6, 'la6', 'lb6'],
    ] as const) {
      const addr = fam === 4 ? v4 : v6;
      const subjects = `${addr('a')},${addr('b')}`;
      const rules = [
        ['-P', 'FORWARD', 'DROP'],
        ...['udp', 'tcp'].flatMap((proto) => [
          [
            '-A',
            'FORWARD',
            '-p',
            proto,
            '--sport',
            '53',
            '-d',
            subjects,
            '-m',
            'conntrack',
            '--ctstate',
            'ESTABLISHED',
            '--ctdir',
            'REPLY',
            '-j',
            'NFQUEUE',
            '--queue-num',
            String(QUEUE),
            '--queue-bypass',
          ],
          [
            '-A',
            'FORWARD',
            '-p',
            proto,
            '--dport',
            '53',
            '-s',
            subjects,
            '-m',
            'conntrack',
            '--ctdir',
            'ORIGINAL',
            '-j',
            'NFLOG',
            '--nflog-group',
            String(GROUP),
          ],
        ]),
        ['-A', 'FORWARD', '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT'],
        ['-A', 'FORWARD', '-p', 'udp', '--dport', '53', '-d', addr('dns'), '-j', 'ACCEPT'],
        ['-A', 'FORWARD', '-p', 'tcp', '--dport', '53', '-d', addr('dns'), '-j', 'ACCEPT'],
        ['-A', 'FORWARD', '-s', addr('a'), '-p', 'tcp', '--dport', '80', '-m', 'set', '--match-set', la, 'dst', '-j', 'ACCEPT'],
        ...(fam === 4
          ? [['-A', 'FORWARD', '-s', addr('a'), '-p', 'tcp', '--dport', '80', '-m', 'set', '--match-set', 'lfull4', 'dst', '-j', 'ACCEPT']]
          : []),
        ['-A', 'FORWARD', '-s', addr('b'), '-p', 'tcp', '--dport', '80', '-m', 'set', '--match-set', lb, 'dst', '-j', 'ACCEPT'],
        ['-A', 'FORWARD', '-s', addr('forger'), '-j', 'ACCEPT'],
      ];
      for (const r of rules) await node.exec(tool, ['-w', ...r]);
    }

    for (const p of Object.keys(PODS) as PodName[])
      peers[p] = await startJsonLineProcess({ file: 'python3', args: ['-u', `${ROOT}/test/helpers/dns-peer.py`], netns: pods[p].name });
    await ask('dns', {
      op: 'serve-dns',
      addrs: [v4('dns'), v6('dns')],
      records: RECORDS,
      unsolicited: { 'sneaky.example': [A(target(31))] },
    });
    await ask('web', { op: 'listen-tcp', addrs: ['0.0.0.0', '::'], port: 80 });

    metrics = createMetrics();
    agent = createDnsEgress({ netns: node.name, logger: nullLogger, metrics });
    await agent.follow(planWith());
  });

  afterAll(async () => {
    await agent?.stop();
    for (const p of Object.values(peers)) await p?.stop();
    for (const ns of Object.values(pods)) await ns?.destroy();
    await node?.destroy();
  });

  it('without a lookup nothing is allowed; a lookup allows its address to the pod at once (UDP, IPv4), with the provenance in the kernel', async () => {
    expect(await connect('a', target(10))).toBe(false);
    const r = await lookupConnect('a', 'good.example');
    expect(r).toMatchObject({ ok: 1, failed: 0, addresses: [target(10)] });
    const saved = (await node.exec('ipset', ['save', 'la4'])).stdout;
    expect(saved).toMatch(new RegExp(`^add la4 ${target(10).replace(/\./g, '\\.')} timeout \\d+ comment "\\d+ good\\.example"$`, 'm'));
  });

  it('one pod’s lookup opens nothing for another pod (same rule, same name)', async () => {
    expect(await connect('b', target(10))).toBe(false);
    expect((await node.exec('ipset', ['save', 'lb4'])).stdout).not.toContain(target(10));
  });

  it('IPv6 (AAAA over an IPv6 server) and DNS over TCP (an answer in two segments), both families', async () => {
    expect(await lookupConnect('a', 'good.example', { type: 'AAAA', server: v6('dns') })).toMatchObject({
      ok: 1,
      addresses: ['2001:db8:100::10'],
    });
    expect(await lookupConnect('a', 'tcp.example', { tcp: true })).toMatchObject({ ok: 1, addresses: [target(60)] });
    expect(await lookupConnect('a', 'tcp6.example', { tcp: true, type: 'AAAA', server: v6('dns') })).toMatchObject({
      ok: 1,
      addresses: ['2001:db8:100::60'],
    });
  });

  it('a CNAME chain grants the final address to the rule of the queried name; a wildcard matches a subdomain', async () => {
    expect(await lookupConnect('a', 'shop.example')).toMatchObject({ ok: 1, addresses: [target(20)] });
    expect(await lookupConnect('a', 'n999.wild.example')).toMatchObject({ ok: 1 });
    // A name no rule of the pod names resolves fine and allows nothing.
    expect(await lookupConnect('a', 'other.example')).toMatchObject({ ok: 0, addresses: [target(70)] });
  });

  it('forged answers grant nothing: a forging pod’s, and the server’s own answer with another transaction id', async () => {
    const ports = Array.from({ length: 50 }, (_, i) => 30000 + i * 700);
    await ask('forger', { op: 'forge', dst: v4('a'), ports, name: 'good.example', address: target(999) });
    const before = await metric('netfence_dns_answers_refused_total{reason="unsolicited"}');
    // The server sends an answer with another id (carrying target 31) before the real one (target 30).
    expect(await lookupConnect('a', 'sneaky.example')).toMatchObject({ ok: 1, addresses: [target(30)] });
    expect(await connect('a', target(999))).toBe(false);
    expect(await connect('a', target(31))).toBe(false);
    expect(await metric('netfence_dns_answers_refused_total{reason="unsolicited"}')).toBeGreaterThan(before || 0);
  });

  it('1,000 lookups of new names, each connecting the instant its answer arrives: no failure', async () => {
    const r = await lookupConnect('a', 'n{i}.wild.example', { count: 1000, timeoutMs: 2000 });
    expect(r['failures']).toEqual([]);
    expect(r['ok']).toBe(1000);
  });

  it('an entry expires after its TTL (minimum 1 s here): new connections are refused again', async () => {
    expect(await lookupConnect('a', 'short.example')).toMatchObject({ ok: 1 });
    await waitUntil('the short-lived entry expired', async () => !(await connect('a', target(40))), 10_000);
  });

  it('bounds: a full learned set refuses what does not fit (counted), DNS still answers; past the node bound new addresses are refused', async () => {
    const r = await lookupConnect('a', 'many.example');
    expect(r['addresses']).toHaveLength(5);
    await waitUntil('the refusal counted', async () => (await metric('netfence_dns_bound_refusals_total{bound="set-full"}')) >= 1, 5000);
    expect(await connect('a', target(105))).toBe(false);

    await agent.follow(planWith({ perNodeMax: 1 }));
    expect(await lookupConnect('a', 'late.example')).toMatchObject({ ok: 0, addresses: [target(50)] });
    expect(await metric('netfence_dns_bound_refusals_total{bound="learned-node"}')).toBeGreaterThanOrEqual(1);
    await agent.follow(planWith());
  });

  it('a write the kernel refuses (the set replaced under the agent): the answer still arrives, nothing is granted, counted', async () => {
    // Someone swaps lb4 for a set without timeouts: the agent's add (with a timeout and a comment) is refused,
    // so the address cannot be programmed before the hold deadline. Fail closed for the address, DNS keeps working.
    const series = 'netfence_dns_released_on_error_total{kind="error"}';
    await node.exec('ipset', ['create', 'lbplain', 'hash:ip', 'family', 'inet']);
    await node.exec('ipset', ['swap', 'lb4', 'lbplain']);
    try {
      const before = (await metric(series)) || 0;
      const learned = await metric('netfence_dns_addresses_learned_total');
      expect(await lookupConnect('b', 'good.example')).toMatchObject({ ok: 0, failed: 1, addresses: [target(10)] });
      expect(await connect('b', target(10))).toBe(false);
      expect(await metric(series)).toBe(before + 1);
      expect(await metric('netfence_dns_addresses_learned_total')).toBe(learned);
    } finally {
      await node.exec('ipset', ['swap', 'lb4', 'lbplain']);
      await node.exec('ipset', ['destroy', 'lbplain']);
    }
    // The learned set back in place, the same lookup grants again.
    expect(await lookupConnect('b', 'good.example')).toMatchObject({ ok: 1, failed: 0 });
  });

  it('the agent stopped while answers flow: every lookup is answered, what was learned stays, nothing new is granted', async () => {
    const flowing = lookupConnect('a', 'good.example', { count: 300 });
    await agent.stop();
    const r = await flowing;
    expect(r['failures']).toEqual([]);
    expect(await lookupConnect('a', 'late.example')).toMatchObject({ ok: 0, addresses: [target(50)] });
    await agent.follow(planWith());
  });
});
