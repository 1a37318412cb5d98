// A long-lived Compiler must give exactly what the pure compile() gives for every snapshot in a sequence
// of changes: caching is an optimisation, never a different answer. Also: unchanged chains and sets come
// back as the same objects (what makes the render cache and the planner cheap).

import { Compiler, compile } from '../../../src/compile/index.js';
import { generateCluster } from '../../../scripts/bench-lib/generator.js';
import { MUTATIONS, remoteNode } from '../../../scripts/bench-lib/mutations.js';
import type { ClusterSnapshot, DesiredState, NodeSettings } from '../../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';

const text = (d: DesiredState): string => [d.v4, d.v6].map((f) => renderIpsetRestore(f.ipsets) + renderFullRestore(f)).join('\n');

describe('incremental Compiler', () => {
  const { snapshot: start, settings } = generateCluster({ tier: 'medium', seed: 7, node: 'node-1' });
  const remote = remoteNode(start, 'node-1');

  it('equals compile() after every change of an 80-step random sequence', () => {
    const compiler = new Compiler();
    let snap: ClusterSnapshot = start;
    expect(text(compiler.compile(snap, settings).desired)).toBe(text(compile(snap, settings).desired));
    for (let step = 0; step < 80; step++) {
      const mutation = MUTATIONS[(step * 7 + 3) % MUTATIONS.length]!;
      snap = mutation.apply(snap, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      const incremental = compiler.compile(snap, settings);
      const full = compile(snap, settings);
      expect({ step, mutation: mutation.name, text: text(incremental.desired) }).toEqual({
        step,
        mutation: mutation.name,
        text: text(full.desired),
      });
      expect(incremental.problems).toEqual(full.problems);
    }
  });

  it('follows settings changes (prefix, unknown-pod policy)', () => {
    const compiler = new Compiler();
    compiler.compile(start, settings);
    const changed: NodeSettings[] = [
      { ...settings, chainPrefix: 'nfx-' },
      { ...settings, unknownPods: 'fail-open' },
      { ...settings, marks: { accept: 0x100000, pass: 0x200000, scratch0: 0x400000, all: 0xf00000 } },
    ];
    for (const s of changed) expect(text(compiler.compile(start, s).desired)).toBe(text(compile(start, s).desired));
  });

  it('returns the very same chain and set objects for what a remote pod change did not touch', () => {
    const compiler = new Compiler();
    const before = compiler.compile(start, settings).desired.v4;
    const after = compiler.compile(
      MUTATIONS.find((m) => m.name === 'podLabelChange-remote')!.apply(start, { node: remote, pick: 3 }),
      settings,
    ).desired.v4;
    const sameChains = after.chains.filter((c, i) => c === before.chains[i]).length;
    expect(sameChains).toBe(before.chains.length);
    const reused = after.ipsets.filter((s) => before.ipsets.includes(s)).length;
    expect(reused).toBeGreaterThanOrEqual(after.ipsets.length - 2);
  });
});
