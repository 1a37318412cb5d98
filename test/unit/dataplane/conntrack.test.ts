import { conntrackDeleteArgs, deletedCount, type FlowFilter } from '../../../src/dataplane/conntrack.js';

describe('conntrackDeleteArgs', () => {
  it.each<{ name: string; filter: FlowFilter; args: string[] }>([
    { name: 'whole family', filter: { family: 4 }, args: ['-D', '-f', 'ipv4'] },
    { name: 'ipv6', filter: { family: 6, dst: 'fd00::1' }, args: ['-D', '-f', 'ipv6', '-d', 'fd00::1'] },
    {
      name: 'every field, protocol lower-cased',
      filter: { family: 4, src: '10.0.0.1', dst: '10.0.0.2', protocol: 'TCP', dport: 80 },
      args: ['-D', '-f', 'ipv4', '-s', '10.0.0.1', '-d', '10.0.0.2', '-p', 'tcp', '--dport', '80'],
    },
  ])('$name', ({ filter, args }) => {
    expect(conntrackDeleteArgs(filter)).toEqual(args);
  });

  it('rejects a port without a protocol', () => {
    expect(() => conntrackDeleteArgs({ family: 4, dport: 53 })).toThrow(/protocol/);
  });
});

describe('deletedCount', () => {
  it.each([
    ['none', 'conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n', 0],
    ['some', 'conntrack v1.4.7 (conntrack-tools): 12 flow entries have been deleted.\n', 12],
    ['one', 'conntrack v1.4.7 (conntrack-tools): 1 flow entry has been deleted.\n', 1],
    ['unrelated error', 'conntrack v1.4.7 (conntrack-tools): Operation failed: invalid parameters\n', undefined],
  ])('%s', (_name, stderr, n) => {
    expect(deletedCount(stderr)).toBe(n);
  });
});
