// What the rules can tell apart about an address (src/map/addresses.ts): the sets holding it. `hash:net`
// memberships are asked once per block of addresses no set's entries can tell apart (the longest prefix any
// entry names); addresses in one such block share them, addresses in two blocks are asked each.

import { describe, expect, it } from '@jest/globals';
import { AddressClasses } from '../../../src/map/addresses.js';
import type { IpSets } from '../../../src/trace/index.js';
import type { SavedIpSet } from '../../../src/render/index.js';

const net = (name: string, members: string[]): [string, SavedIpSet] => [name, { name, type: 'hash:net', family: 4, members } as SavedIpSet];
const host = (name: string, members: string[]): [string, SavedIpSet] => [name, { name, type: 'hash:ip', family: 4, members } as SavedIpSet];

describe('address classes', () => {
  it('tells addresses apart by every hash:net entry, down to the longest prefix named (a /27, a /32 nomatch)', () => {
    const sets: IpSets = new Map([
      net('nf4b:wide', ['10.0.0.0/8']),
      net('nf4b:block', ['10.244.1.0/27', '10.244.1.6/32 nomatch']),
      host('nf4s:web', ['10.244.1.5', '10.244.1.40']),
    ]);
    const classes = new AddressClasses(4);
    classes.add(sets);
    // Asked in an order that puts a block's first address first and later ones after.
    expect(classes.classOf('10.244.1.5')).toBe('nf4b:block nf4b:wide nf4s:web');
    expect(classes.classOf('10.244.1.6')).toBe('nf4b:wide');
    expect(classes.classOf('10.244.1.7')).toBe('nf4b:block nf4b:wide');
    expect(classes.classOf('10.244.1.40')).toBe('nf4b:wide nf4s:web');
    expect(classes.classOf('10.244.1.41')).toBe('nf4b:wide');
    expect(classes.classOf('192.168.0.1')).toBe('');
    expect(classes.classOf('fd00::1')).toBe('');
  });

  it('asks again when a node adds a hash:net set after addresses were classed', () => {
    const classes = new AddressClasses(4);
    classes.add(new Map([net('nf4b:a', ['10.244.0.0/16'])]));
    expect(classes.classOf('10.244.1.5')).toBe('nf4b:a');
    classes.add(new Map([net('nf4b:b', ['10.244.0.0/16'])]));
    expect(classes.classOf('10.244.1.6')).toBe('nf4b:a nf4b:b');
    classes.add(new Map([net('nf4b:c', ['10.244.1.4/30'])]));
    expect(classes.classOf('10.244.1.7')).toBe('nf4b:a nf4b:b nf4b:c');
    expect(classes.classOf('10.244.1.9')).toBe('nf4b:a nf4b:b');
  });
});
