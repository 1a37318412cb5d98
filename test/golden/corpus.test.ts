// Every rules/<case>: the compiler's output equals the reviewed expected files, and every packet in
// packets.yaml gets the verdict the spec-level oracle gives (so the packet tables themselves are checked).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { incompleteRead, loadManifests } from '../../src/cluster/manifests.js';
import { compile } from '../../src/compile/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../src/render/index.js';
import { EXPECTED_FILES, goldenCaseNames, loadGoldenCase } from '../helpers/golden.js';
import { Oracle } from '../helpers/oracle.js';

const cases = goldenCaseNames();

describe.each(cases)('rules/%s', (name) => {
  const c = loadGoldenCase(name);
  const expected = (file: string) => readFileSync(join(c.dir, file), 'utf8');

  it('compiles to exactly expected.ipsets', () => expect(c.ipsets).toBe(expected(EXPECTED_FILES.ipsets)));
  it('compiles to exactly expected.rules', () => expect(c.rules).toBe(expected(EXPECTED_FILES.rules)));
  it('reports exactly expected.problems', () => expect(c.problems).toBe(expected(EXPECTED_FILES.problems)));
  // The README promises `netfence compile --resources rules/<case>` prints these files; it refuses sources it cannot read completely.
  it('reads completely (no document is dropped)', () => expect(incompleteRead(loadManifests([join(c.dir, 'cluster.yaml')]).problems)).toEqual([]));

  it('compiles deterministically regardless of input order', () => {
    const s = c.snapshot;
    const reversed = { ...s, pods: [...s.pods].reverse(), policies: [...s.policies].reverse(), namespaces: [...s.namespaces].reverse() };
    const again = compile(reversed, c.settings).desired.v4;
    expect(renderFullRestore(again)).toBe(c.rules);
    expect(renderIpsetRestore(again.ipsets)).toBe(c.ipsets);
  });

  const resolve = (ref: string): string => {
    if (!ref.includes('/')) return ref;
    const [ns, pod] = ref.split('/');
    const found = c.snapshot.pods.find((p) => p.namespace === ns && p.name === pod);
    if (!found?.ips[0]) throw new Error(`packets.yaml names unknown pod ${ref}`);
    return found.ips[0];
  };

  if (c.packets.length > 0) {
    it.each(c.packets.map((p) => [p.name, p] as const))('packet table agrees with the spec oracle: %s', (_n, p) => {
      const oracle = new Oracle(c.snapshot);
      const verdict = oracle.allows({ src: resolve(p.from), dst: resolve(p.to), proto: p.proto, port: p.port }) ? 'ACCEPT' : 'DROP';
      // The oracle knows nothing of unknown-pod handling; that case is a node-level rule (fail-closed).
      const unknownLocal = !c.snapshot.pods.some((pod) => pod.ips.includes(resolve(p.to))) && resolve(p.to).startsWith('10.244.1.');
      expect(unknownLocal ? 'DROP' : verdict).toBe(p.expect);
    });
  }
});
