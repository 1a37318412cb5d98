// `netfence trace --proto icmp|icmpv6 --icmp-type N`: the packet the kernel would hand FORWARD (conntrack
// state, hop limit, bridged or routed), and verdicts over `compile --family both` of a dual-stack cluster
// where web/db is isolated for ingress (TCP 5432 from role=api and team=ops; TCP 8080 from a /64).
// Expectations come from the RFCs and the README's ICMPv6 table, not from the compiler: ND between two
// pods of one bridge is always allowed (hop limit 255, RFC 4861), anything else ICMP is under policy.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { defaultHopLimit, icmpCtstate, icmpPacketFor } from '../../../src/trace/icmp.js';
import { ip, NODE, V4_CIDR, V6_CIDR, writeCluster } from '../../helpers/dual-stack-cluster.js';

const layout = { bridge: 'cni0', uplink: 'eth0', podCidrs: [V4_CIDR, V6_CIDR] };

describe('the ICMP packet a trace walks', () => {
  it.each([
    [6, 135, 'UNTRACKED'], // NS: nf_conntrack never tracks ND
    [6, 136, 'UNTRACKED'],
    [6, 143, 'UNTRACKED'], // MLDv2 report
    [6, 128, 'NEW'], // echo request opens a flow
    [6, 129, 'INVALID'], // an echo reply alone belongs to no flow
    [6, 137, 'INVALID'], // redirect: not in conntrack's untracked list
    [6, 1, 'INVALID'], // an error with no flow it relates to
    [4, 8, 'NEW'],
    [4, 0, 'INVALID'],
    [4, 3, 'INVALID'],
  ] as const)('IPv%i type %i is %s to conntrack', (family, type, state) => {
    expect(icmpCtstate(family, type)).toBe(state);
  });

  it('sends ND with hop limit 255 and MLD with 1 (RFC 4861 §7.1, RFC 3810 §5), anything else with 64', () => {
    expect([133, 134, 135, 136, 137].map(defaultHopLimit)).toEqual([255, 255, 255, 255, 255]);
    expect([130, 131, 132, 143].map(defaultHopLimit)).toEqual([1, 1, 1, 1]);
    expect(defaultHopLimit(128)).toBe(64);
  });

  it('is bridged between local pods and to a multicast group (hop limit as sent); routed otherwise, one hop lower', () => {
    const local = icmpPacketFor({ src: 'fd00:10:244:1::b', dst: 'fd00:10:244:1::a', family: 6, type: 135 }, layout);
    expect(local).toMatchObject({
      proto: 'ipv6-icmp',
      inIface: 'cni0',
      outIface: 'cni0',
      dport: 0,
      icmp: { type: 135, hopLimit: 255 },
      ctstate: 'UNTRACKED',
    });
    const group = icmpPacketFor({ src: 'fd00:10:244:1::b', dst: 'ff02::1:ff00:a', family: 6, type: 135 }, layout);
    expect(group).toMatchObject({ inIface: 'cni0', outIface: 'cni0', icmp: { hopLimit: 255 } });
    const dad = icmpPacketFor({ src: '::', dst: 'ff02::1:ff00:a', family: 6, type: 135 }, layout);
    expect(dad).toMatchObject({ inIface: 'cni0', outIface: 'cni0' });
    const remote = icmpPacketFor({ src: 'fd00:10:244:2::5', dst: 'fd00:10:244:1::a', family: 6, type: 135 }, layout);
    expect(remote).toMatchObject({ inIface: 'eth0', outIface: 'cni0', icmp: { hopLimit: 254 } });
    const v4 = icmpPacketFor({ src: '10.244.1.11', dst: '10.244.1.10', family: 4, type: 8 }, layout);
    expect(v4).toMatchObject({ proto: 'icmp', ctstate: 'NEW', inIface: 'cni0', outIface: 'cni0' });
  });

  it('to this node is delivered, not forwarded: no out interface, hop limit as sent (ND to the gateway keeps 255)', () => {
    const toGateway = icmpPacketFor({ src: 'fd00:10:244:1::b', dst: 'fd00:10:244:1::1', family: 6, type: 135, toNode: true }, layout);
    expect(toGateway).toMatchObject({ inIface: 'cni0', outIface: '', icmp: { type: 135, hopLimit: 255 }, ctstate: 'UNTRACKED' });
    const fromLinkLocal = icmpPacketFor({ src: 'fe80::b', dst: 'fd00:10:244:1::1', family: 6, type: 143, toNode: true }, layout);
    expect(fromLinkLocal).toMatchObject({ inIface: 'cni0', outIface: '', icmp: { hopLimit: 1 } });
  });
});

describe('netfence trace --proto icmp|icmpv6 over a dual-stack dump', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nft-icmp-unit-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cluster = writeCluster(dir);
  const resources = ['--resources', cluster, '--node-name', NODE];
  let both: string;
  const run = async (...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };
  beforeAll(async () => {
    both = join(dir, 'both.txt');
    writeFileSync(both, (await run('compile', '--node-name', NODE, '--resources', cluster, '--family', 'both')).out);
  });

  it.each([
    // [args, exit, what the output must say]
    // RFC 4861 §7.1.1: an NS has hop limit 255; the ND allowance accepts it between two pods of the bridge, isolated or not.
    [
      ['--proto', 'icmpv6', '--icmp-type', '135', '--src', 'web/api', '--dst', 'web/db'],
      0,
      /icmpv6 type 135 hop limit 255, untracked[\s\S]*verdict ACCEPT/,
    ],
    [['--proto', 'icmpv6', '--icmp-type', '135', '--src', 'web/api', '--dst', 'ff02::1:ff00:a'], 0, /verdict ACCEPT/],
    [
      ['--proto', 'icmpv6', '--icmp-type', '136', '--src', 'web/api', '--dst', 'web/db'],
      0,
      /verdict ACCEPT: ICMPv6 neighbour advertisement, always allowed on the link/,
    ],
    // Not 255 on arrival: not the link's own ND, so web/db's policy judges it, and allows only TCP.
    [
      ['--proto', 'icmpv6', '--icmp-type', '135', '--hop-limit', '64', '--src', 'web/api', '--dst', 'web/db'],
      1,
      /verdict DROP: web\/db is isolated for ingress/,
    ],
    [['--proto', 'icmpv6', '--icmp-type', '135', '--src', 'ops/tool', '--dst', 'web/db'], 1, /hop limit 254[\s\S]*verdict DROP/],
    // ping6 stays under policy: dropped to the isolated pod, allowed to a pod no policy selects.
    [
      ['--proto', 'icmpv6', '--icmp-type', '128', '--src', 'web/api', '--dst', 'web/db'],
      1,
      /icmpv6 type 128 hop limit 64, new flow[\s\S]*verdict DROP: web\/db is isolated for ingress/,
    ],
    [['--proto', 'icmpv6', '--icmp-type', '128', '--src', 'web/api', '--dst', 'web/v6only'], 0, /verdict ACCEPT/],
    [
      ['--proto', 'icmp', '--icmp-type', '8', '--src', 'web/api', '--dst', 'web/db'],
      1,
      /icmp\s+type\s+8,\s+new\s+flow[\s\S]*verdict DROP: web\/db is isolated for ingress/,
    ],
    [
      ['--proto', 'icmp', '--icmp-type', '8', '--src', 'web/api', '--dst', 'web/v4only'],
      0,
      /10\.244\.1\.11 \(web\/api, local\)[\s\S]*verdict ACCEPT/,
    ],
  ] as const)('trace %j', async (args, code, text) => {
    const r = await run('trace', '--saved', both, ...resources, ...args);
    expect(r.err).toBe('');
    expect(r.out).toMatch(text);
    expect(r.code).toBe(code);
  });

  it('--json carries the ICMP packet', async () => {
    const r = await run(
      'trace',
      '--saved',
      both,
      ...resources,
      '--proto',
      'icmpv6',
      '--icmp-type',
      '135',
      '--src',
      ip('web/api', 6),
      '--dst',
      ip('web/db', 6),
      '--json',
    );
    expect(JSON.parse(r.out)).toMatchObject({
      family: 6,
      verdict: 'ACCEPT',
      packet: { proto: 'ipv6-icmp', icmp: { type: 135, hopLimit: 255 }, ctstate: 'UNTRACKED' },
    });
  });

  it.each([
    [['--proto', 'icmpv6', '--src', 'web/api', '--dst', 'web/db'], /--proto icmpv6 needs --icmp-type N/],
    [
      ['--proto', 'icmpv6', '--icmp-type', '135', '--port', '80', '--src', 'web/api', '--dst', 'web/db'],
      /--port is for tcp, udp and sctp: icmpv6 has no ports/,
    ],
    [['--proto', 'icmpv6', '--icmp-type', '256', '--src', 'web/api', '--dst', 'web/db'], /--icmp-type must be a number 0-255, not "256"/],
    [
      ['--proto', 'icmpv6', '--icmp-type', '135', '--hop-limit', '0', '--src', 'web/api', '--dst', 'web/db'],
      /--hop-limit must be a number 1-255/,
    ],
    [['--proto', 'icmp', '--icmp-type', '8', '--hop-limit', '64', '--src', 'web/api', '--dst', 'web/db'], /--hop-limit is for icmpv6/],
    [
      ['--proto', 'icmpv6', '--icmp-type', '135', '--family', '4', '--src', 'web/api', '--dst', 'web/db'],
      /--family 4 contradicts --proto icmpv6 \(IPv6\)/,
    ],
    [
      ['--proto', 'icmp', '--icmp-type', '8', '--src', ip('web/api', 6), '--dst', 'web/db'],
      /--family 4, but fd00:10:244:1::b is an IPv6 address/,
    ],
    [
      ['--proto', 'tcp', '--icmp-type', '8', '--port', '80', '--src', 'web/api', '--dst', 'web/db'],
      /--icmp-type is for icmp and icmpv6, not tcp/,
    ],
    [['--proto', 'tcp', '--src', 'web/api', '--dst', 'web/db'], /--port is required/],
  ] as const)('%j is a usage error', async (args, message) => {
    const r = await run('trace', '--saved', both, ...resources, ...args);
    expect(r.err).toMatch(message);
    expect(r.code).toBe(2);
  });
});
