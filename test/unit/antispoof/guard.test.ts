// The guard's loop with fake sources: it writes the table when the bindings change and not otherwise,
// re-asserts it after `reassertMs`, carries the drop counts into each rewrite, and writes nothing at all
// on a node without a CNI result cache.

import { UNKNOWN_POLICING } from '../../../src/antispoof/bridged.js';
import { AntiSpoofGuard } from '../../../src/antispoof/guard.js';
import type { CniBinding } from '../../../src/dataplane/cni-cache.js';
import type { NftCount } from '../../../src/dataplane/nft.js';
import { createLogger } from '../../../src/log.js';
import { Writable } from 'node:stream';

const quiet = createLogger({ level: 'error', format: 'json', stream: new Writable({ write: (_c, _e, done) => done() }) });
const A: CniBinding = { key: 'cbr0-a-eth0', containerId: 'a', hostVeth: 'veth0a', ips: ['10.244.1.2'] };

function harness(
  cache: { value: CniBinding[] | undefined },
  links = [{ name: 'veth0a', master: 'cni0' }],
  counts = new Map<string, NftCount>(),
  logger = quiet,
) {
  const scripts: string[] = [];
  let now = 0;
  const guard = new AntiSpoofGuard({
    bridge: 'cni0',
    readLinks: async () => links,
    readCache: async () => cache.value,
    apply: async (s) => void scripts.push(s),
    antiSpoofing: true,
    policing: () => UNKNOWN_POLICING,
    readCounts: async () => counts,
    logger,
    reassertMs: 1000,
    now: () => now,
  });
  return { guard, scripts, advance: (ms: number) => void (now += ms) };
}

describe('AntiSpoofGuard', () => {
  it('writes once per change of bindings, and again only to re-assert', async () => {
    const cache = { value: [A] as CniBinding[] | undefined };
    const h = harness(cache);
    await h.guard.refresh();
    await h.guard.refresh();
    expect(h.scripts).toHaveLength(1);
    expect(h.guard.state?.bindings.map((b) => b.port)).toEqual(['veth0a']);
    cache.value = [];
    await h.guard.refresh();
    expect(h.scripts).toHaveLength(2);
    expect(h.guard.state?.unknownPorts).toEqual(['veth0a']);
    h.advance(1500);
    await h.guard.refresh();
    expect(h.scripts).toHaveLength(3);
    expect(h.scripts[2]).toBe(h.scripts[1]);
  });

  it('carries the drop counts of the table it replaces into every rewrite, re-asserts included', async () => {
    const counts = new Map<string, NftCount>();
    const h = harness({ value: [A] }, undefined, counts);
    await h.guard.refresh();
    expect(h.scripts[0]).toContain('ether type ip counter drop comment "nf:spoof ipv4 veth0a"');
    counts.set('nf:spoof ipv4 veth0a', { packets: 7, bytes: 420 });
    counts.set('nf:spoof unknown-port', { packets: 2, bytes: 84 });
    counts.set('nf:spoof ipv4 vethgone', { packets: 5, bytes: 300 });
    h.advance(1500);
    await h.guard.refresh();
    expect(h.scripts[1]).toContain('ether type ip counter packets 7 bytes 420 drop comment "nf:spoof ipv4 veth0a"');
    expect(h.scripts[1]).toContain('meta iifkind "veth" counter packets 2 bytes 84 drop comment "nf:spoof unknown-port"');
    // A port that is gone takes its counts with it; the others start from zero as before.
    expect(h.scripts[1]).not.toContain('vethgone');
    expect(h.scripts[1]).toContain('ether type arp counter drop comment "nf:spoof arp veth0a"');
    // Counts alone never cause a write: the bindings are compared without them.
    await h.guard.refresh();
    expect(h.scripts).toHaveLength(2);
  });

  it('programs nothing on a node without a CNI result cache', async () => {
    const h = harness({ value: undefined });
    await h.guard.refresh();
    expect(h.scripts).toEqual([]);
    expect(h.guard.state).toBeUndefined();
  });

  it('logs two ports claiming one address once per conflict, naming both cache entries', async () => {
    const lines: { message: string; address?: string; claims?: string[] }[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(chunk.toString())), done()) });
    const logger = createLogger({ level: 'warn', format: 'json', stream });
    const stale: CniBinding = { ...A, key: 'cbr0-old-eth0', hostVeth: 'veth0a' };
    const fresh: CniBinding = { ...A, key: 'cbr0-new-eth0', containerId: 'new', hostVeth: 'veth0b' };
    const cache = { value: [stale, fresh] as CniBinding[] | undefined };
    const links = [
      { name: 'veth0a', master: 'cni0' },
      { name: 'veth0b', master: 'cni0' },
    ];
    const h = harness(cache, links, new Map(), logger);
    await h.guard.refresh();
    h.advance(1500);
    await h.guard.refresh();
    await new Promise((r) => setImmediate(r));
    const warned = lines.filter((l) => l.address !== undefined);
    expect(warned).toEqual([
      expect.objectContaining({ address: '10.244.1.2', claims: ['cbr0-new-eth0 (port veth0b)', 'cbr0-old-eth0 (port veth0a)'] }),
    ]);
    // Resolved (the stale entry went), then back: a new occurrence is logged again.
    cache.value = [fresh];
    await h.guard.refresh();
    cache.value = [stale, fresh];
    await h.guard.refresh();
    await new Promise((r) => setImmediate(r));
    expect(lines.filter((l) => l.address !== undefined)).toHaveLength(2);
  });
});
