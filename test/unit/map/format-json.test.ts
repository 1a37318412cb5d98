// The map's JSON is written piece by piece (a 70 MB string of it was most of `netfence map`'s peak memory);
// the text must stay exactly what JSON.stringify gives, indented or not, whatever the data holds.

import { describe, expect, it } from '@jest/globals';
import { buildMap, writeJson } from '../../../src/map/index.js';
import { mapSettingsFor, tenNamespaces } from '../../helpers/map-cluster.js';

function pieces(value: unknown, indent: number): string[] {
  const out: string[] = [];
  writeJson(value, (t) => out.push(t), indent);
  return out;
}

const TRICKY = {
  empty: { list: [], object: {} },
  skipped: { a: undefined, b: 1, f: () => 1, nested: { only: undefined } },
  holes: [undefined, null, () => 1, 0, '', false],
  text: 'line one\nline two </script> <!-- "quoted" \\ \u2028 é',
  numbers: [0, -1.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY],
  deep: { a: { b: { c: { d: [1, { e: [[], {}] }] } } } },
  arrays: [[1, [2, [3]]], [{ x: [] }], []],
};

describe('writeJson', () => {
  it.each([0, 2, 4])('writes what JSON.stringify(value, null, %i) writes', (indent) => {
    for (const value of [TRICKY, [], {}, [TRICKY, TRICKY], 'text', 3, null, true, [[]], { a: [{}] }])
      expect(pieces(value, indent).join('')).toBe(JSON.stringify(value, null, indent));
  });

  it('writes a map exactly as JSON.stringify does, an element at a time', () => {
    const map = buildMap(tenNamespaces(), mapSettingsFor, { explain: 50 }).map;
    for (const indent of [0, 2]) {
      const out = pieces(map, indent);
      expect(out.join('')).toBe(JSON.stringify(map, null, indent));
      // In pieces: no piece holds more than one group or connection.
      expect(out.length).toBeGreaterThan(map.groups.length + map.edges.length);
    }
  });
});
