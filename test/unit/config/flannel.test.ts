import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlannelEnvError, parseFlannelSubnetEnv, readFlannelSubnetEnv } from '../../../src/config/flannel.js';

describe('parseFlannelSubnetEnv', () => {
  it.each([
    {
      name: 'v4 as flanneld writes it',
      text: 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
      expect: { network: '10.244.0.0/16', subnet: '10.244.1.0/24', mtu: 1450, ipMasq: true, podCidrs: ['10.244.1.0/24'] },
    },
    {
      name: 'dual stack',
      text: 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.2.1/24\nFLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:2::1/64\n',
      expect: {
        network: '10.244.0.0/16',
        subnet: '10.244.2.0/24',
        ipv6Network: 'fd00:10:244::/56',
        ipv6Subnet: 'fd00:10:244:2::/64',
        podCidrs: ['10.244.2.0/24', 'fd00:10:244:2::/64'],
      },
    },
    {
      name: 'v6 only',
      text: 'FLANNEL_IPV6_SUBNET=fd00:10:244:3::1/64\nFLANNEL_MTU=1430\n',
      expect: { ipv6Subnet: 'fd00:10:244:3::/64', mtu: 1430, podCidrs: ['fd00:10:244:3::/64'] },
    },
    {
      name: 'comments, blank lines, quotes, CRLF and unknown keys',
      text: '# written by hand\r\n\r\nFLANNEL_SUBNET="10.244.4.1/24"\r\nFLANNEL_FUTURE=1\r\n',
      expect: { subnet: '10.244.4.0/24', podCidrs: ['10.244.4.0/24'] },
    },
    { name: 'empty', text: '', expect: { podCidrs: [] } },
  ])('$name', ({ text, expect: expected }) => {
    expect(parseFlannelSubnetEnv(text)).toEqual(expected);
  });

  it.each([
    { name: 'v6 CIDR in a v4 key', text: 'FLANNEL_SUBNET=fd00::1/64', problem: 'line 1: FLANNEL_SUBNET=fd00::1/64 is not an IPv4 CIDR' },
    { name: 'not a CIDR', text: 'FLANNEL_NETWORK=10.244.0.0', problem: 'line 1: FLANNEL_NETWORK=10.244.0.0 is not an IPv4 CIDR' },
    { name: 'bad MTU', text: '\nFLANNEL_MTU=big', problem: 'line 2: FLANNEL_MTU=big is not a valid MTU' },
    { name: 'bad IPMASQ', text: 'FLANNEL_IPMASQ=yes', problem: 'line 1: FLANNEL_IPMASQ=yes is not true or false' },
    { name: 'no equals sign', text: 'FLANNEL_SUBNET', problem: 'line 1: expected KEY=VALUE' },
  ])('rejects $name', ({ text, problem }) => {
    let caught: unknown;
    try {
      parseFlannelSubnetEnv(text, '/run/flannel/subnet.env');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FlannelEnvError);
    expect((caught as FlannelEnvError).problems).toEqual([problem]);
    expect((caught as FlannelEnvError).message).toBe(`/run/flannel/subnet.env: ${problem}`);
  });
});

describe('readFlannelSubnetEnv', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'nf-flannel-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads and parses the file', async () => {
    const path = join(dir, 'subnet.env');
    writeFileSync(path, 'FLANNEL_SUBNET=10.244.7.1/24\n');
    expect((await readFlannelSubnetEnv(path))?.podCidrs).toEqual(['10.244.7.0/24']);
  });

  it('returns undefined when the file does not exist', async () => {
    expect(await readFlannelSubnetEnv(join(dir, 'missing.env'))).toBeUndefined();
  });

  it('names the file in parse errors', async () => {
    const path = join(dir, 'bad.env');
    writeFileSync(path, 'FLANNEL_SUBNET=nope\n');
    await expect(readFlannelSubnetEnv(path)).rejects.toThrow(`${path}: line 1: FLANNEL_SUBNET=nope is not an IPv4 CIDR`);
  });
});
