// Learned sets (ClusterNetworkPolicy domainNames) in ipset text: the create line's options are written as
// `ipset restore` takes them and read back from `ipset save` (lines below captured from ipset 7.17 on this
// machine), and a learned member's remaining timeout and provenance comment are read back for the tools.

import { parseLearnedComment } from '../../../src/model/index.js';
import { parseIpsetSave, renderIpsetRestore, savedEntryOf, savedMembersOf } from '../../../src/render/index.js';
import { ipSetName } from '../../../src/model/index.js';

const SAVED = [
  'create nf4d:learn hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment bucketsize 12 initval 0x52945d37',
  'add nf4d:learn 198.51.100.10 timeout 19 comment "1700000000 good.example"',
  'add nf4d:learn 198.51.100.11 timeout 0 comment "1700000005 a.cdn.example"',
  'create nf4s:plain hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x836e358f',
  'add nf4s:plain 10.0.0.1',
].join('\n');

describe('learned sets in ipset text', () => {
  it('renders the create line with timeout, maxelem and comment, and reads it back', () => {
    const text = renderIpsetRestore([
      { name: ipSetName('nf4d:learn'), type: 'hash:ip', family: 4, members: [], description: 'x', learned: { timeout: 30, maxelem: 4096 } },
    ]);
    expect(text).toBe('create nf4d:learn hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment\n');
    expect(parseIpsetSave(text).get('nf4d:learn')).toEqual({
      name: 'nf4d:learn',
      type: 'hash:ip',
      family: 4,
      maxelem: 4096,
      timeout: 30,
      comment: true,
      members: [],
    });
  });

  it('reads a saved learned set: options on the set, each member with its remaining timeout and comment', () => {
    const sets = parseIpsetSave(SAVED);
    expect(sets.get('nf4d:learn')).toMatchObject({ maxelem: 4096, timeout: 30, comment: true });
    expect(sets.get('nf4s:plain')).not.toHaveProperty('timeout');
    expect(sets.get('nf4s:plain')).not.toHaveProperty('comment');
    const entries = sets.get('nf4d:learn')!.members.map(savedEntryOf);
    expect(entries).toEqual([
      { element: '198.51.100.10', timeout: 19, comment: '1700000000 good.example' },
      { element: '198.51.100.11', timeout: 0, comment: '1700000005 a.cdn.example' },
    ]);
    expect(parseLearnedComment(entries[0]!.comment!)).toEqual({ learnedAt: 1700000000, name: 'good.example' });
    expect(savedEntryOf('10.0.0.1')).toEqual({ element: '10.0.0.1' });
    expect(savedEntryOf('10.0.0.0/8 nomatch')).toEqual({ element: '10.0.0.0/8' });
  });

  it('reads the members of the named sets only out of a whole save (what the DNS agent counts at start)', () => {
    const wanted = savedMembersOf(`${SAVED}\n`, new Set(['nf4d:learn', 'nf4d:absent']));
    expect([...wanted.keys()]).toEqual(['nf4d:learn']);
    expect(wanted.get('nf4d:learn')!.map((e) => [e.element, e.timeout])).toEqual([
      ['198.51.100.10', 19],
      ['198.51.100.11', 0],
    ]);
  });
});
