// `-o FILE` of a streamed output (netfence map): FILE is either what it was or the complete new output, never a
// torn half. The rendering fails partway (after more than one chunk was written), or the file cannot be put in
// place: the old FILE stays, no temporary file is left beside it, and the error says so.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { writeOutput } from '../../../src/cli/output-file.js';
import type { Out } from '../../../src/map/index.js';

let dir: string;
let err: string;
let out: string;
const io = { out: (t: string) => void (out += t), err: (t: string) => void (err += t) };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-output-file-'));
  err = '';
  out = '';
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** 200 KB in 2,000 pieces (several write chunks), then the rendering fails. */
const failingWriter = (o: Out): void => {
  for (let i = 0; i < 2000; i++) o(`${'x'.repeat(99)}\n`);
  throw new Error('formatter failed');
};

describe('writeOutput to a file', () => {
  it('a rendering that fails partway leaves the old file as it was, and nothing beside it', () => {
    const file = join(dir, 'map.svg');
    writeFileSync(file, 'the old map\n');
    expect(() => writeOutput(file, io, failingWriter, 'map')).toThrow('formatter failed');
    expect(readFileSync(file, 'utf8')).toBe('the old map\n');
    expect(readdirSync(dir)).toEqual(['map.svg']);
    expect(err).toBe('');
  });

  it('a rendering that fails partway writes no file where there was none', () => {
    expect(() => writeOutput(join(dir, 'map.svg'), io, failingWriter, 'map')).toThrow('formatter failed');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a file that cannot be put in place is a clear error; what was there stays, and nothing beside it', () => {
    const file = join(dir, 'taken');
    mkdirSync(file);
    writeFileSync(join(file, 'inside'), 'kept');
    expect(() => writeOutput(file, io, (o) => o('new text'), 'map')).toThrow(`cannot write ${file}: `);
    expect(readdirSync(dir)).toEqual(['taken']);
    expect(readFileSync(join(file, 'inside'), 'utf8')).toBe('kept');
  });

  it('a directory that does not exist is a clear error', () => {
    const file = join(dir, 'no-such-dir', 'map.svg');
    expect(() => writeOutput(file, io, (o) => o('new text'), 'map')).toThrow(`cannot write ${file}: `);
  });

  it('a complete output replaces the file whole, in order, and says so', () => {
    const file = join(dir, 'map.md');
    writeFileSync(file, 'the old map, longer than the new one\n'.repeat(10_000));
    const pieces = Array.from({ length: 5000 }, (_, i) => `line ${i} é\n`);
    writeOutput(file, io, (o) => pieces.forEach((p) => o(p)), 'map');
    expect(readFileSync(file, 'utf8')).toBe(pieces.join(''));
    expect(readdirSync(dir)).toEqual(['map.md']);
    expect(err).toBe(`netfence map: wrote ${file}\n`);
  });

  it('writes through a symbolic link, as a plain write of the file would', () => {
    const real = join(dir, 'real.json');
    writeFileSync(real, 'old');
    symlinkSync(real, join(dir, 'link.json'));
    writeOutput(join(dir, 'link.json'), io, (o) => o('new'), 'map');
    expect(readFileSync(real, 'utf8')).toBe('new');
    expect(readdirSync(dir).sort()).toEqual(['link.json', 'real.json']);
  });

  it('without a file, the output goes to stdout', () => {
    writeOutput(undefined, io, (o) => (o('a'), o('b')), 'map');
    expect(out).toBe('ab');
    expect(err).toBe('');
  });
});
