// Every rules/<case>: the compiler's output equals the reviewed expected files, and every packet in
// packets.yaml gets the verdict the spec-level oracle gives (so the packet tables themselves are checked).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { incompleteRead, loadManifests } from '../../src/cluster/manifests.js';
import { compile } from '../../src/compile/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../src/render/index.js';
import { existsSync } from 'node:fs';
import { EXPECTED6_FILES, EXPECTED_FILES, goldenCaseNames, loadGoldenCase, packetAddress, packetFamily } from '../helpers/golden.js';
import { Oracle } from '../helpers/oracle.js';

const cases = goldenCaseNames();

describe.each(cases)('rules/%s', (name) => {
  const c = loadGoldenCase(name);
  const expected = (file: string) => readFileSync(join(c.dir, file), 'utf8');

  it('compiles to exactly expected.ipsets', () => expect(c.ipsets).toBe(expected(EXPECTED_FILES.ipsets)));
  it('compiles to exactly expected.rules', () => expect(c.rules).toBe(expected(EXPECTED_FILES.rules)));
  it('reports exactly expected.problems', () => expect(c.problems).toBe(expected(EXPECTED_FILES.problems)));
  // Dual-stack cases (node-1 has an IPv6 pod CIDR) carry the IPv6 payload too; IPv4-only cases have none.
  if (c.v6) {
    const v6 = c.v6;
    it('compiles the IPv6 family to exactly expected6.ipsets', () => expect(v6.ipsets).toBe(expected(EXPECTED6_FILES.ipsets)));
    it('compiles the IPv6 family to exactly expected6.rules', () => expect(v6.rules).toBe(expected(EXPECTED6_FILES.rules)));
  } else {
    it('has no IPv6 payload files (node-1 has no IPv6 pod CIDR)', () =>
      expect(Object.values(EXPECTED6_FILES).filter((f) => existsSync(join(c.dir, f)))).toEqual([]));
  }
  // The README promises `netfence compile --resources rules/<case>` prints these files; it refuses sources it cannot read completely.
  it('reads completely (no document is dropped)', () =>
    expect(incompleteRead(loadManifests([join(c.dir, 'cluster.yaml')]).problems)).toEqual([]));

  it('compiles deterministically regardless of input order', () => {
    const s = c.snapshot;
    const reversed = { ...s, pods: [...s.pods].reverse(), policies: [...s.policies].reverse(), namespaces: [...s.namespaces].reverse() };
    const again = compile(reversed, c.settings).desired;
    expect(renderFullRestore(again.v4)).toBe(c.rules);
    expect(renderIpsetRestore(again.v4.ipsets)).toBe(c.ipsets);
    if (c.v6) expect(renderFullRestore(again.v6)).toBe(c.v6.rules);
  });

  if (c.packets.length > 0) {
    it.each(c.packets.map((p) => [p.name, p] as const))('packet table agrees with the spec oracle: %s', (_n, p) => {
      const family = packetFamily(p);
      const [src, dst] = [packetAddress(c, p.from, family), packetAddress(c, p.to, family)];
      const oracle = new Oracle(c.snapshot);
      const verdict = oracle.allows({ src, dst, proto: p.proto, port: p.port }) ? 'ACCEPT' : 'DROP';
      // The oracle knows nothing of unknown-pod handling; that case is a node-level rule (fail-closed).
      const unknownLocal =
        !c.snapshot.pods.some((pod) => pod.ips.includes(dst)) && (dst.startsWith('10.244.1.') || dst.startsWith('fd00:10:244:1:'));
      expect(unknownLocal ? 'DROP' : verdict).toBe(p.expect);
    });
  }
});
