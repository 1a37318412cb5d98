// Kernel tool failures an operator can fix are explained in one sentence saying what to do. The stderr
// texts are what the tools and execa print (iptables 1.8, ipset 7, iproute2 6, execa 9).

import { remedyFor, toolFamily } from '../../../src/cli/hints.js';

describe('remedyFor', () => {
  it.each([
    [
      'iptables-nft-restore --noflush',
      'Command failed with ENOENT: iptables-nft-restore --noflush\nspawn iptables-nft-restore ENOENT',
      'iptables-nft-restore not found: install iptables (Debian/Ubuntu: apt-get install iptables)',
    ],
    [
      'ipset restore',
      'exec of "ipset" failed: No such file or directory',
      'ipset not found: install ipset (Debian/Ubuntu: apt-get install ipset)',
    ],
    [
      'conntrack -D -d 10.0.0.1',
      'spawn conntrack ENOENT',
      'conntrack not found: install conntrack (Debian/Ubuntu: apt-get install conntrack)',
    ],
  ])('%s missing', (command, stderr, expected) => {
    expect(remedyFor({ command, stderr })).toBe(expected);
  });

  it.each([
    [
      'iptables-nft-save',
      'iptables-nft-save v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)',
    ],
    ['iptables-legacy-save', 'iptables-legacy-save v1.8.9 (legacy): Cannot initialize: Permission denied (you must be root)'],
    ['ipset save', 'ipset v7.17: Kernel error received: Operation not permitted'],
  ])('%s without privilege', (command, stderr) => {
    expect(remedyFor({ command, stderr })).toBe(
      `${command.split(' ')[0]} needs root or CAP_NET_ADMIN: run netfence as root (sudo), or in the DaemonSet, which grants NET_ADMIN`,
    );
  });

  it('a missing network namespace is named', () => {
    expect(remedyFor({ command: 'ipset save', stderr: 'Cannot open network namespace "nope": No such file or directory' })).toBe(
      'network namespace nope does not exist (see `ip netns list`)',
    );
  });

  it('says nothing about other failures', () => {
    expect(remedyFor({ command: 'iptables-nft-restore --noflush', stderr: 'iptables-restore: line 3 failed' })).toBeUndefined();
    // A file named in the input that does not exist is not a missing tool.
    expect(
      remedyFor({ command: 'ipset restore', stderr: 'ipset v7.17: Error in line 2: The set with the given name does not exist' }),
    ).toBeUndefined();
  });

  it('maps tools to their package family', () => {
    expect(['ip6tables-legacy-restore', '/usr/sbin/iptables-nft', 'ipset', 'ip'].map(toolFamily)).toEqual([
      'ip6tables',
      'iptables',
      'ipset',
      'ip',
    ]);
  });
});
