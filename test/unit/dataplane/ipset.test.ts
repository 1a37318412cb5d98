import { ipsetErrorLine } from '../../../src/dataplane/ipset.js';

describe('ipsetErrorLine', () => {
  it.each<{ name: string; stderr: string; line: number | undefined }>([
    { name: 'bad member', stderr: "ipset v7.17: Error in line 3: Syntax error: '33' is out of range 0-32\n", line: 3 },
    { name: 'missing set', stderr: 'ipset v7.17: Error in line 2: The set with the given name does not exist\n', line: 2 },
    {
      name: 'older version',
      stderr: 'ipset v7.5: Error in line 12: Set cannot be created: set with the same name already exists\n',
      line: 12,
    },
    {
      name: 'no line',
      stderr: "ipset v7.17: No command specified: unknown argument bogus\nTry `ipset help' for more information.\n",
      line: undefined,
    },
  ])('$name', ({ stderr, line }) => {
    expect(ipsetErrorLine(stderr)).toBe(line);
  });
});
