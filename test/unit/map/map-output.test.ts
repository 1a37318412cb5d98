// `netfence map` writes its output as it is made, a chunk at a time, to `-o FILE` or stdout (the large tier's
// map is 70-100 MB of text). Each format's bytes must be the whole text the formatter makes, in order, on
// either path; the JSON is JSON.stringify's own layout. Two maps in one process each map their own cluster.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { main } from '../../../src/cli/main.js';
import { formatDot, formatHtml, formatMarkdown, formatSvg, type ConnectivityMap } from '../../../src/map/index.js';
import { snapshotObjects } from '../../../scripts/bench-daemon.js';
import { generateCluster } from '../../../scripts/bench-lib/generator.js';

let dir: string;
let cluster: string;
let json: string;

async function map(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(['map', ...argv], { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

async function mapToFile(file: string, ...argv: string[]): Promise<string> {
  const r = await map(...argv, '-o', join(dir, file));
  expect(r).toEqual({ code: 0, out: '', err: `netfence map: wrote ${join(dir, file)}\n` });
  return readFileSync(join(dir, file), 'utf8');
}

/** The map's data inside the page, as the page's script reads it. */
const pageData = (html: string): string => /<script type="application\/json" id="map-data">(.*?)<\/script>/s.exec(html)![1]!;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nft-map-output-'));
  // 1,000 pods and 100 policies: a map of over 1 MB, so the output is written in many chunks.
  const { snapshot } = generateCluster({ tier: 'medium', seed: 1, node: 'node-1' });
  cluster = join(dir, 'cluster.json');
  writeFileSync(cluster, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: snapshotObjects(snapshot) }));
  json = await mapToFile('map.json', '--resources', cluster, '--format', 'json');
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('netfence map output', () => {
  it('writes the JSON as JSON.stringify lays it out, the same to a file and to stdout', async () => {
    expect(json.length).toBeGreaterThan(1 << 20);
    const data = JSON.parse(json) as ConnectivityMap;
    expect(data.edges.length).toBeGreaterThan(500);
    expect(json).toBe(`${JSON.stringify(data, null, 2)}\n`);
    expect((await map('--resources', cluster, '--format', 'json')).out).toBe(json);
  });

  it('writes each drawing whole: what the formatter makes of the map', async () => {
    const data = JSON.parse(json) as ConnectivityMap;
    expect(await mapToFile('map.md', '--resources', cluster, '--format', 'md')).toBe(formatMarkdown(data));
    expect(await mapToFile('map.dot', '--resources', cluster, '--format', 'dot')).toBe(formatDot(data));
    expect(await mapToFile('map.svg', '--resources', cluster, '--format', 'svg')).toBe(formatSvg(data));
  });

  it('writes the page whole, its data as JSON.stringify writes it with < escaped, the same to a file and to stdout', async () => {
    const html = await mapToFile('map.html', '--resources', cluster, '--format', 'html');
    const text = pageData(html);
    const data = JSON.parse(text) as ConnectivityMap;
    expect(text).toBe(JSON.stringify(data).replace(/</g, '\\u003c'));
    // The page's map is the JSON's, with `why` text on its first connections.
    expect(data.edges.map((e) => ({ ...e, why: undefined }))).toEqual(
      (JSON.parse(json) as ConnectivityMap).edges.map((e) => ({ ...e, why: undefined })),
    );
    expect(data.edges[0]!.why?.length).toBeGreaterThan(0);
    expect(html).toBe(formatHtml(data));
    expect((await map('--resources', cluster, '--format', 'html')).out).toBe(html);
  });

  it('maps each cluster afresh when one process maps two', async () => {
    // The same pods and nodes without a policy: "By default, a pod is non-isolated for egress; all outbound
    // connections are allowed", and likewise for ingress, so every group is open and nothing is listed.
    const { snapshot } = generateCluster({ tier: 'medium', seed: 1, node: 'node-1' });
    const open = join(dir, 'open.json');
    writeFileSync(
      open,
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: snapshotObjects({ ...snapshot, policies: [], clusterPolicies: [] }) }),
    );
    const data = JSON.parse(await mapToFile('open-map.json', '--resources', open, '--format', 'json')) as ConnectivityMap;
    expect(data.edges).toEqual([]);
    expect(data.groups.filter((g) => g.egress !== 'open' || g.ingress !== 'open')).toEqual([]);
  });
});
