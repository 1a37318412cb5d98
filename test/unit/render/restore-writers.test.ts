// One writer per format: the ipset ops and restore lines netfence writes, read back by the parsers that sit
// beside them (render/ipset.ts, render/iptables-parse.ts), so a writer and its reader cannot drift apart.

import {
  declareChainLine,
  deleteChainLine,
  filterTransaction,
  IPSET_MAXELEM,
  parseIpsetSave,
  parseIptablesSave,
  renderIpsetOps,
  ruleLine,
  type IpsetOp,
} from '../../../src/render/index.js';

describe('renderIpsetOps', () => {
  it.each<{ name: string; ops: IpsetOp[]; text: string }>([
    {
      name: 'create with the default maxelem, then members',
      ops: [
        { op: 'create', name: 'nf4s:a', set: { type: 'hash:ip', family: 4 } },
        { op: 'add', name: 'nf4s:a', members: ['10.0.0.1', '10.0.0.2'] },
      ],
      text: `create nf4s:a hash:ip family inet hashsize 1024 maxelem ${IPSET_MAXELEM}\nadd nf4s:a 10.0.0.1\nadd nf4s:a 10.0.0.2\n`,
    },
    {
      name: 'priming an existing set keeps the maxelem it was created with',
      ops: [
        { op: 'create', name: 'nf6b:b', set: { type: 'hash:net', family: 6 }, maxelem: 65536 },
        { op: 'del', name: 'nf6b:b', members: ['2001:db8::/64'] },
      ],
      text: 'create nf6b:b hash:net family inet6 hashsize 1024 maxelem 65536\ndel nf6b:b 2001:db8::/64\n',
    },
    {
      name: 'temp set swapped in',
      ops: [
        { op: 'flush', name: 'nf4t:a' },
        { op: 'swap', name: 'nf4t:a', with: 'nf4s:a' },
        { op: 'destroy', name: 'nf4t:a' },
      ],
      text: 'flush nf4t:a\nswap nf4t:a nf4s:a\ndestroy nf4t:a\n',
    },
    { name: 'nothing to do', ops: [{ op: 'add', name: 'nf4s:a', members: [] }], text: '' },
  ])('$name', ({ ops, text }) => {
    expect(renderIpsetOps(ops)).toBe(text);
  });

  it('what it creates, parseIpsetSave reads back', () => {
    const text = renderIpsetOps([
      { op: 'create', name: 'nf4n:p', set: { type: 'hash:ip,port', family: 4 } },
      { op: 'add', name: 'nf4n:p', members: ['10.0.0.1,tcp:80'] },
    ]);
    expect([...parseIpsetSave(text).values()]).toEqual([
      { name: 'nf4n:p', type: 'hash:ip,port', family: 4, maxelem: IPSET_MAXELEM, members: ['10.0.0.1,tcp:80'] },
    ]);
  });
});

describe('restore lines', () => {
  it('a transaction of declare and append lines parses back to the same chains and rules', () => {
    const rule = '-s 10.0.0.0/8 -m comment --comment "nf:AAAAAAAAAAAAAAAA x" -j ACCEPT';
    const text = filterTransaction([declareChainLine('nf-a'), declareChainLine('FORWARD', 'DROP'), ruleLine('append', 'nf-a', rule)]);
    const filter = parseIptablesSave(text).get('filter');
    expect(filter?.chains.get('FORWARD')?.policy).toBe('DROP');
    expect(filter?.chains.get('nf-a')?.rules.map((r) => r.text)).toEqual([rule]);
  });

  it('writes the iptables-restore verbs', () => {
    expect([ruleLine('insert-first', 'FORWARD', '-j nf-x'), ruleLine('delete', 'FORWARD', '-j nf-x'), deleteChainLine('nf-x')]).toEqual([
      '-I FORWARD 1 -j nf-x',
      '-D FORWARD -j nf-x',
      '-X nf-x',
    ]);
    expect(filterTransaction([])).toBe('');
  });
});
