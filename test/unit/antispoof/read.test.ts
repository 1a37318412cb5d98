// The programmed table read back (fixture: `nft -j list table bridge netfence` of a table rendered for
// port vethaaaa = 10.244.1.2 + fd00:10:244:1::2, with vethdock a port of another bridge), and what inspect and trace say
// about strict mode and anti-spoofing from it.

import { readFileSync } from 'node:fs';
import { readProgrammedAntiSpoof } from '../../../src/antispoof/read.js';
import { compile } from '../../../src/compile/index.js';
import {
  antiSpoofVerdict,
  antiSpoofView,
  establishedFate,
  formatHardening,
  revokedFlows,
  strictModeOf,
} from '../../../src/inspect/strict-antispoof.js';
import { rulesetOfDesired, type TraceResult } from '../../../src/trace/index.js';
import { settings, snapshot } from '../../helpers/builders.js';

const json = readFileSync(new URL('./fixtures/programmed-table.json', import.meta.url), 'utf8');
const programmed = readProgrammedAntiSpoof(json, 'cni0')!;

describe('readProgrammedAntiSpoof', () => {
  it('finds the bound port, its addresses, the other bridge’s port and every drop counter', () => {
    expect(programmed.state.bindings).toEqual([
      { port: 'vethaaaa', ipv4: ['10.244.1.2'], ipv6: ['fd00:10:244:1::2'], source: 'programmed table' },
    ]);
    expect(programmed.state.otherPorts).toEqual(['vethdock']);
    expect([...programmed.counters.keys()].sort()).toEqual([
      'nf:spoof arp vethaaaa',
      'nf:spoof ipv4 vethaaaa',
      'nf:spoof ipv6 vethaaaa',
      'nf:spoof nd vethaaaa',
      'nf:spoof other vethaaaa',
      'nf:spoof router vethaaaa',
      'nf:spoof unknown-port',
    ]);
  });
  it('is undefined for a document without the table', () => {
    expect(readProgrammedAntiSpoof(JSON.stringify({ nftables: [{ metainfo: {} }] }), 'cni0')).toBeUndefined();
  });
});

describe('antiSpoofVerdict (trace --in-iface)', () => {
  it.each([
    { port: 'vethaaaa', src: '10.244.1.2', expect: 'accept' },
    { port: 'vethaaaa', src: '10.244.1.3', expect: 'drop' },
    { port: 'vethdock', src: '172.17.0.2', expect: 'accept' },
    { port: 'vethnew', src: '10.244.1.9', expect: 'drop' },
    { port: 'vethaaaa', src: 'fd00:10:244:1::2', expect: 'accept' },
    { port: 'vethaaaa', src: 'fd00:10:244:1::3', expect: 'drop' },
    { port: 'vethaaaa', src: 'fe80::1', expect: 'accept' },
  ])('$src on $port: $expect', ({ port, src, expect: expected }) => {
    expect(antiSpoofVerdict(programmed, port, src, src.includes(':') ? 'ipv6' : 'ipv4').verdict).toBe(expected);
  });
  it('inspect counts drops per bound port', () => {
    expect(antiSpoofView(programmed)).toEqual({
      programmed: true,
      ports: [{ port: 'vethaaaa', addresses: ['10.244.1.2', 'fd00:10:244:1::2'], drops: 0 }],
      unknownPortDrops: 0,
    });
    expect(antiSpoofView(undefined).programmed).toBe(false);
  });
});

describe('strict mode as read from a ruleset', () => {
  const ruleset = (revokeMark?: number) =>
    rulesetOfDesired(compile(snapshot({}), settings(revokeMark !== undefined ? { revokeMark } : {})).desired.v4).ruleset;
  const dropped = { verdict: 'DROP' } as TraceResult;
  const accepted = { verdict: 'ACCEPT' } as TraceResult;
  it('is on with the connmark rule at the top of nf-FORWARD', () => {
    expect(strictModeOf(ruleset(0x100000), 'nf-')).toEqual({ on: true, bit: 0x100000, position: 1 });
    expect(strictModeOf(ruleset(), 'nf-')).toEqual({ on: false });
  });
  it('says what happens to an established flow of a traced tuple', () => {
    expect(establishedFate(strictModeOf(ruleset(0x100000), 'nf-'), dropped)).toMatch(/is revoked/);
    expect(establishedFate(strictModeOf(ruleset(0x100000), 'nf-'), accepted)).toMatch(/allowed to go on/);
    expect(establishedFate(strictModeOf(ruleset(), 'nf-'), dropped)).toMatch(/strict mode off/);
  });
});

describe('inspect: flows carrying the revoke bit now', () => {
  const BIT = 0x100000;
  const entry = (src: string, server: string, mark: number) => ({ mark, orig: { src }, reply: { src: server } });
  const pods = [{ pod: 'x/a', ip: '10.244.1.2' }, { pod: 'x/b', ip: '10.244.1.3' }, { ip: '10.244.1.9' }];
  it('counts entries with the bit (other mark bits ignored), in all and per local pod at either end', () => {
    const entries = [
      entry('10.244.1.2', '10.244.1.3', BIT),
      entry('10.244.1.2', '10.244.1.3', BIT | 0x1),
      entry('10.244.1.2', '10.244.1.3', 0x1),
      entry('10.244.2.7', '10.244.1.2', BIT),
      entry('10.244.2.7', '10.244.1.9', BIT),
      entry('10.244.2.7', '10.244.3.1', BIT),
      // A pod talking to itself through a Service counts once for it.
      entry('10.244.1.3', '10.244.1.3', BIT),
    ];
    expect(revokedFlows(entries, BIT, pods)).toEqual({
      revokedFlows: 6,
      revokedByPod: [
        { pod: '10.244.1.9', flows: 1 },
        { pod: 'x/a', flows: 3 },
        { pod: 'x/b', flows: 3 },
      ],
    });
    expect(revokedFlows([entry('10.244.1.2', '10.244.1.3', 0)], BIT, pods)).toEqual({ revokedFlows: 0, revokedByPod: [] });
  });
  it('prints the count under the strict-mode line, or why conntrack could not be read', () => {
    const on = { on: true, bit: BIT, position: 1 };
    expect(formatHardening({ ...on, revokedFlows: 2, revokedByPod: [{ pod: 'x/a', flows: 2 }] }, undefined)).toContain(
      '  2 flow(s) carry the revoke bit now; by local pod: x/a 2',
    );
    expect(formatHardening({ ...on, revokedUnreadable: 'EPERM' }, undefined)).toContain('  revoked flows: conntrack not readable (EPERM)');
    expect(formatHardening({ on: false }, undefined).join('\n')).not.toMatch(/revoke bit now/);
  });
});
