// `why --live` on egress a ClusterNetworkPolicy `domainNames` rule governs: the desired answer (no kernel) says
// a lookup would allow it; the source pod's daemon answers /learned from its kernel's learned sets, and the
// live report names the learned address (or says nothing was learned). The daemon here is the real HTTP server
// (src/observe/http-server.ts) with the daemon's real /learned query (src/daemon/learned-query.ts) over a set
// text `ipset save` would print; hostile answers go through a fake reach.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { liveReport, type DaemonReach } from '../../../src/commands/why-live.js';
import { learnedQuery } from '../../../src/daemon/learned-query.js';
import { defaultDnsLearningSettings, type DnsLearningPlan } from '../../../src/model/index.js';
import { ObserveServer } from '../../../src/observe/http-server.js';
import type { Answer } from '../../../src/why/index.js';

const CLUSTER = `
apiVersion: v1
kind: Node
metadata: {name: node-a}
spec: {podCIDR: 10.244.1.0/24}
status: {addresses: [{type: InternalIP, address: 192.168.0.1}]}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop, labels: {app: web}}, spec: {nodeName: node-a}, status: {phase: Running, podIP: 10.244.1.10}}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: by-name}
spec:
  tier: Admin
  priority: 1
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}
  egress:
  - {name: api, action: Accept, to: [{domainNames: [good.example]}], protocols: [{tcp: {destinationPort: {number: 443}}}]}
  - {action: Deny, to: [{networks: [0.0.0.0/0]}]}
`;

const SET = 'nf-l-test4';
const PLAN: DnsLearningPlan = {
  settings: defaultDnsLearningSettings,
  sets: [
    {
      setName: SET,
      family: 4,
      pod: 'shop/web',
      podAddress: '10.244.1.10',
      policy: 'by-name',
      ruleIndex: 0,
      ruleName: 'api',
      domainNames: ['good.example'],
    },
  ],
};
// 1700000000 is 2023-11-14 22:13:20 UTC; read 10 s later with 42 s left: until 22:14:12.
const NOW = 1_700_000_010_000;
const saved = (members: string[]) =>
  [`create ${SET} hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment`, ...members.map((m) => `add ${SET} ${m}`), ''].join(
    '\n',
  );

describe('why --live and domainNames', () => {
  let dir: string;
  let file: string;
  let members: string[];
  let reads: string[];
  let server: ObserveServer;
  let url: string;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-why-learned-'));
    file = join(dir, 'cluster.yaml');
    writeFileSync(file, CLUSTER);
    members = [];
    reads = [];
    server = new ObserveServer({
      health: { liveness: () => ({ ok: true }), readiness: () => ({ ok: true }) },
      metrics: { render: () => Promise.resolve(''), contentType: 'text/plain' },
      flows: () => ({ records: [] }),
    });
    server.serveLearned(
      learnedQuery({
        plan: () => PLAN,
        readSet: (name) => (reads.push(name), Promise.resolve(saved(members))),
        now: () => NOW,
      }),
    );
    url = `http://127.0.0.1:${(await server.start('127.0.0.1:0')).port}`;
  });
  afterEach(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const why = async (...extra: string[]) => {
    let out = '';
    let err = '';
    const code = await main(['why', '--resources', file, '--live', '--daemon-url', `node-a=${url}`, '--src', 'shop/web', ...extra], {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err, flat: out.replace(/\s+/g, ' ') };
  };

  it('a learned destination: the live report names the name, the lookup time and until when', async () => {
    members = [
      '198.51.100.99 timeout 50 comment "1699999990 other.good.example"',
      '198.51.100.10 timeout 42 comment "1700000000 good.example"',
    ];
    const r = await why('--dst', '198.51.100.10:443');
    // The desired answer stays what the cluster alone says (dropped; a lookup would allow it).
    expect(r.code).toBe(1);
    expect(r.flat).toContain('after shop/web looks up good.example');
    expect(r.flat).toContain("allowed: 198.51.100.10 learned for good.example from shop/web's lookup at 22:13:20, until 22:14:12");
    expect(reads).toEqual([SET]);
  });

  it('--json carries what the daemon read', async () => {
    members = ['198.51.100.10 timeout 42 comment "1700000000 good.example"'];
    const r = await why('--dst', '198.51.100.10:443', '--json');
    const node = (JSON.parse(r.out) as { live: { nodes: { node: string; learned: unknown }[] } }).live.nodes[0]!;
    expect(node.learned).toEqual({
      pod: 'shop/web',
      address: '198.51.100.10',
      entries: [
        { set: SET, policy: 'by-name', rule: 'egress:0 api', name: 'good.example', learnedAt: 1_700_000_000, remainingSeconds: 42 },
      ],
      text: ["allowed: 198.51.100.10 learned for good.example from shop/web's lookup at 22:13:20, until 22:14:12"],
    });
  });

  it('nothing learned for the address: says so', async () => {
    members = ['198.51.100.99 timeout 50 comment "1699999990 good.example"'];
    const r = await why('--dst', '198.51.100.10:443');
    expect(r.code).toBe(1);
    expect(r.flat).toContain('not learned on node-a: no lookup of those names seen');
    expect(r.flat).not.toContain('allowed: 198.51.100.10');
  });

  it('no domainNames rule would help (another port): /learned is not asked', async () => {
    const r = await why('--dst', '198.51.100.10:80');
    expect(r.code).toBe(1);
    expect(reads).toEqual([]);
    expect(r.flat).not.toContain('learned');
  });

  it('the endpoint refuses a query it cannot read, and is absent until the agent serves it', async () => {
    const bad = await fetch(`${url}/learned?pod=shop/web&address=not-an-address`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'address must be an IPv4 or IPv6 address' });
    expect((await fetch(`${url}/learned?pod=..%2F..&address=198.51.100.10`)).status).toBe(400);
    const bare = new ObserveServer({
      health: { liveness: () => ({ ok: true }), readiness: () => ({ ok: true }) },
      metrics: { render: () => Promise.resolve(''), contentType: 'text/plain' },
    });
    const port = (await bare.start('127.0.0.1:0')).port;
    try {
      expect((await fetch(`http://127.0.0.1:${port}/learned?pod=shop/web&address=198.51.100.10`)).status).toBe(404);
    } finally {
      await bare.stop();
    }
    expect(reads).toEqual([]);
  });
});

describe('why --live: hostile /learned answers', () => {
  // The desired answer as `why` builds it: a dropped egress a domainNames rule would allow.
  const answer = {
    connection: {
      src: { kind: 'pod', pod: 'shop/web', node: 'node-a', ip: '10.244.1.10' },
      dst: { kind: 'external', ip: '198.51.100.10' },
      proto: 'tcp',
      port: 443,
    },
    verdict: 'dropped',
    sides: [
      {
        node: 'node-a',
        direction: 'egress',
        verdict: 'dropped',
        because: 'denied',
        afterLookup: 'would be allowed by ClusterNetworkPolicy by-name rule egress:0 api Accept, after shop/web looks up good.example',
      },
    ],
    hops: [],
    compiled: ['node-a'],
  } as unknown as Answer;
  const reach = (learned: { status: number; body: string }): DaemonReach => ({
    get: (_node, path) =>
      Promise.resolve(
        path.startsWith('/learned')
          ? learned
          : path === '/readyz'
            ? { status: 200, body: 'ok\n' }
            : { status: 200, body: '{"records":[]}' },
      ),
  });
  const body = (over: Record<string, unknown>) =>
    JSON.stringify({ pod: 'shop/web', address: '198.51.100.10', readAt: NOW, sets: 1, names: ['good.example'], learned: [], ...over });

  it('escapes what the daemon says before it is printed', async () => {
    const live = await liveReport(
      answer,
      reach({ status: 200, body: body({ learned: [{ set: 's', policy: 'p', rule: 'r', name: 'evil\u001b]0;owned\u0007.example' }] }) }),
    );
    expect(live.nodes[0]!.learned!.text).toEqual([
      "allowed: 198.51.100.10 learned for evil\\x1b]0;owned\\x07.example from shop/web's lookup",
    ]);
  });

  it.each([
    ['not JSON', 'not json', /is not JSON/],
    [
      'a wrong field',
      body({ learned: [{ set: 's', policy: 'p', rule: 'r', learnedAt: 'soon' }] }),
      /answer\.learned\[0\]\.learnedAt: expected seconds since 1970/,
    ],
    ['a time no Date holds', body({ readAt: 9e15 }), /answer\.readAt: expected a time in ms since 1970/],
    ['too many entries', body({ learned: Array.from({ length: 33 }, () => ({ set: 's', policy: 'p', rule: 'r' })) }), /at most 32 entries/],
    ['a refusal', JSON.stringify({ error: 'no\u001b[2J' }), /refused the query: no\\x1b\[2J/],
  ])('%s: the node is reported as unreadable, nothing printed from it', async (_what, text, message) => {
    const n = (await liveReport(answer, reach({ status: 200, body: text }))).nodes[0]!;
    expect(n.error).toMatch(message);
    expect(n.learned).toBeUndefined();
  });

  it('an older daemon without /learned: a note, the rest of the report stands', async () => {
    const n = (await liveReport(answer, reach({ status: 404, body: 'not found: try /healthz\u001b[2J' }))).nodes[0]!;
    expect(n.error).toBeUndefined();
    expect(n.learned!.text).toEqual(['node-a cannot say what it learned for shop/web (/learned 404: not found: try /healthz\\x1b[2J)']);
  });
});
