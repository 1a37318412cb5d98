import { iptablesTool, restoreErrorLine } from '../../../src/dataplane/iptables.js';

// Real stderr captured from iptables 1.8.9 (nft and legacy) in scratch netns, plus older nft forms.
describe('restoreErrorLine', () => {
  it.each<{ name: string; stderr: string; line: number | undefined }>([
    {
      name: 'parse error, both backends',
      stderr:
        "iptables-restore v1.8.9 (legacy): unknown option \"--bogus\"\nError occurred at line: 4\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n",
      line: 4,
    },
    {
      name: 'legacy kernel reject',
      stderr: 'iptables-restore: line 15 failed\n',
      line: 15,
    },
    {
      name: 'nft kernel reject with reason',
      stderr: 'iptables-nft-restore: line 4 failed: No chain/target/match by that name.\n',
      line: 4,
    },
    {
      name: 'nft commit-time rule failure',
      stderr: 'iptables-nft-restore v1.8.9 (nf_tables): \nline 12: RULE_APPEND failed (Too many links): rule in chain nf-test\n',
      line: 12,
    },
    {
      name: 'truncated input',
      stderr: 'iptables-restore: COMMIT expected at line 4\n',
      line: 4,
    },
    {
      name: 'nft bad table name',
      stderr:
        "iptables-nft-restore v1.8.9 (nf_tables): iptables-nft-restore: line 1 table name 'filtre' invalid\nError occurred at line: 1\n",
      line: 1,
    },
    {
      name: 'no line given',
      stderr: "iptables-restore v1.8.9 (legacy): can't initialize iptables table `filter': Permission denied (you must be root)\n",
      line: undefined,
    },
    { name: 'empty stderr', stderr: '', line: undefined },
  ])('$name', ({ stderr, line }) => {
    expect(restoreErrorLine(stderr)).toBe(line);
  });

  const input = [
    '*filter',
    ':nf-a - [0:0]',
    '-A nf-a -j ACCEPT',
    '-A nf-a -m comment --comment x -j nf-missing',
    '-A nf-a -j RETURN',
    'COMMIT',
    '',
  ].join('\n');
  const danglingJump = "iptables-nft-restore v1.8.9 (nf_tables): Chain 'nf-missing' does not exist\nError occurred at line: 6\n";

  it.each<{ name: string; stderr: string; input: string | undefined; line: number | undefined }>([
    { name: 'nft dangling jump blamed on COMMIT moves to the jumping rule', stderr: danglingJump, input, line: 4 },
    { name: 'without input the reported line stands', stderr: danglingJump, input: undefined, line: 6 },
    {
      name: 'goto counts as a jump',
      stderr: danglingJump,
      input: input.replace('-j nf-missing', '-g nf-missing'),
      line: 4,
    },
    {
      name: 'no rule names the chain: reported line stands',
      stderr: danglingJump,
      input: input.replace('-j nf-missing', '-j DROP'),
      line: 6,
    },
    {
      name: 'only the failing table block is searched',
      stderr: "iptables-nft-restore v1.8.9 (nf_tables): Chain 'nf-missing' does not exist\nError occurred at line: 5\n",
      input: ['*nat', '-A X -j nf-missing', 'COMMIT', '*filter', 'COMMIT', ''].join('\n'),
      line: 5,
    },
  ])('$name', ({ stderr, input, line }) => {
    expect(restoreErrorLine(stderr, input)).toBe(line);
  });
});

describe('iptablesTool', () => {
  it.each([
    [4, 'nft', 'restore', 'iptables-nft-restore'],
    [6, 'nft', 'save', 'ip6tables-nft-save'],
    [4, 'legacy', 'save', 'iptables-legacy-save'],
    [6, 'legacy', 'restore', 'ip6tables-legacy-restore'],
  ] as const)('family %d %s %s → %s', (family, backend, tool, expected) => {
    expect(iptablesTool(family, backend, tool)).toBe(expected);
  });
});
