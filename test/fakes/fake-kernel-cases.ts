// What the real tools accept and refuse, as a table both the fake (test/unit/fakes) and the real
// iptables/ipset (test/kernel/fake-kernel-parity) are held to: the fake is only worth its tests while it
// refuses what the kernel refuses. Each case starts from BASE (a chain and a set of ours) and applies
// `ipset` then `iptables` text; `refused` says which step the real tools fail, and nothing of that step
// may stay applied (iptables) — ipset is not transactional, so its cases fail on their only line.

import type { IpFamily } from '../../src/model/index.js';

export interface ToolCase {
  readonly name: string;
  readonly family?: IpFamily;
  readonly ipset?: string;
  readonly iptables?: string;
  readonly refused: 'ipset' | 'iptables' | false;
}

export const BASE_IPSET = 'create nfk4s:base hash:ip family inet hashsize 1024 maxelem 1048576\nadd nfk4s:base 10.0.0.1\n';
export const BASE_IPTABLES =
  '*filter\n:nfk-base - [0:0]\n-A nfk-base -m set --match-set nfk4s:base src -j ACCEPT\n-A FORWARD -j nfk-base\nCOMMIT\n';

const filter = (...lines: string[]): string => `*filter\n${lines.join('\n')}\nCOMMIT\n`;

export const TOOL_CASES: readonly ToolCase[] = [
  { name: 'a new chain with a rule', iptables: filter(':nfk-a - [0:0]', '-A nfk-a -s 10.0.0.0/8 -j DROP'), refused: false },
  {
    name: 'a jump to a chain declared later in the same block',
    iptables: filter(':nfk-a - [0:0]', '-A nfk-a -j nfk-b', ':nfk-b - [0:0]'),
    refused: 'iptables',
  },
  {
    name: 'a jump to a chain declared earlier in the same block',
    iptables: filter(':nfk-a - [0:0]', ':nfk-b - [0:0]', '-A nfk-a -j nfk-b'),
    refused: false,
  },
  { name: 'a jump to a chain that does not exist', iptables: filter(':nfk-a - [0:0]', '-A nfk-a -j nfk-missing'), refused: 'iptables' },
  { name: 'a rule in a chain that does not exist', iptables: filter('-A nfk-missing -j ACCEPT'), refused: 'iptables' },
  { name: 'deleting a chain another chain jumps to', iptables: filter('-X nfk-base'), refused: 'iptables' },
  { name: 'deleting a chain that still has rules', iptables: filter('-D FORWARD -j nfk-base', '-X nfk-base'), refused: 'iptables' },
  {
    name: 'flushing then deleting a chain no longer referenced',
    iptables: filter('-D FORWARD -j nfk-base', ':nfk-base - [0:0]', '-X nfk-base'),
    refused: false,
  },
  { name: 'deleting a built-in chain', iptables: filter('-X FORWARD'), refused: 'iptables' },
  { name: 'deleting a rule that is not there', iptables: filter('-D FORWARD -j DROP'), refused: 'iptables' },
  { name: 'inserting past the end of a chain', iptables: filter('-I FORWARD 5 -j DROP'), refused: 'iptables' },
  { name: 'a half transaction (no COMMIT)', iptables: '*filter\n:nfk-a - [0:0]\n-A nfk-a -j DROP\n', refused: 'iptables' },
  { name: 'a chain name over 28 characters', iptables: filter(':nfk-abcdefghijklmnopqrstuvwxyz - [0:0]'), refused: 'iptables' },
  {
    name: 'a rule matching a set that does not exist',
    iptables: filter('-A nfk-base -m set --match-set nfk4s:missing src -j ACCEPT'),
    refused: 'iptables',
  },
  {
    name: 'an IPv6 rule matching an IPv4 set',
    family: 6,
    iptables: filter(':nfk-a - [0:0]', '-A nfk-a -m set --match-set nfk4s:base src -j ACCEPT'),
    refused: 'iptables',
  },
  {
    name: 'an identical create again (-exist)',
    ipset: 'create nfk4s:base hash:ip family inet hashsize 1024 maxelem 1048576\n',
    refused: false,
  },
  {
    name: 'a create of an existing set with another type',
    ipset: 'create nfk4s:base hash:net family inet hashsize 1024 maxelem 1048576\n',
    refused: 'ipset',
  },
  { name: 'a member of the other family', ipset: 'add nfk4s:base 2001:db8::1\n', refused: 'ipset' },
  {
    name: 'a /0 in a hash:net set',
    ipset: 'create nfk4b:net hash:net family inet hashsize 1024 maxelem 1048576\nadd nfk4b:net 0.0.0.0/0\n',
    refused: 'ipset',
  },
  {
    name: 'a swap of sets of different types',
    ipset: 'create nfk4b:net hash:net family inet hashsize 1024 maxelem 1048576\nswap nfk4b:net nfk4s:base\n',
    refused: 'ipset',
  },
  {
    name: 'a swap of sets of the same type',
    ipset:
      'create nfk4s:tmp hash:ip family inet hashsize 1024 maxelem 1048576\nadd nfk4s:tmp 10.0.0.2\nswap nfk4s:tmp nfk4s:base\ndestroy nfk4s:tmp\n',
    refused: false,
  },
  { name: 'destroying a set a rule uses', ipset: 'destroy nfk4s:base\n', refused: 'ipset' },
  {
    name: 'a port out of range',
    ipset: 'create nfk4n:p hash:ip,port family inet hashsize 1024 maxelem 1048576\nadd nfk4n:p 10.0.0.1,tcp:70000\n',
    refused: 'ipset',
  },
  {
    name: 'a member with host bits, masked as ipset saves it',
    ipset: 'create nfk4b:net hash:net family inet hashsize 1024 maxelem 1048576\nadd nfk4b:net 10.1.2.3/16\nadd nfk4b:net 10.9.9.9/32\n',
    refused: false,
  },
  {
    name: 'a member given nomatch, deleted by its element alone',
    ipset:
      'create nfk4b:net hash:net family inet hashsize 1024 maxelem 1048576\nadd nfk4b:net 10.1.0.0/16 nomatch\ndel nfk4b:net 10.1.0.0/16\n',
    refused: false,
  },
  {
    name: 'a member deleted with its options',
    ipset:
      'create nfk4b:net hash:net family inet hashsize 1024 maxelem 1048576\nadd nfk4b:net 10.1.0.0/16 nomatch\ndel nfk4b:net 10.1.0.0/16 nomatch\n',
    refused: 'ipset',
  },
  { name: 'nomatch in a hash:ip set', ipset: 'add nfk4s:base 10.0.0.2 nomatch\n', refused: 'ipset' },
  {
    name: 'a learned set: created with timeout and comment, a member added with both',
    ipset:
      'create nfk4d:dns hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment\nadd nfk4d:dns 198.51.100.10 timeout 600 comment "1700000000 good.example"\n',
    refused: false,
  },
  { name: 'a member timeout in a set created without timeout', ipset: 'add nfk4s:base 10.0.0.2 timeout 30\n', refused: 'ipset' },
  { name: 'a member comment in a set created without comment', ipset: 'add nfk4s:base 10.0.0.2 comment "x"\n', refused: 'ipset' },
];
