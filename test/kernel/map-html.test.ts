// `netfence map --format html` opened in a real headless browser (Debian's chromium, driven through its
// DevTools protocol): the page must draw every group and connection of the map, show a group's policies and
// a connection's `why` text on click, hide a namespace when its box is unticked, log no console error, and
// need nothing from the network. A screenshot is saved to .test-out/map-html.png for a person to judge.
// Needs the `chromium` apt package (scripts/lib/prereqs.sh installs it as root, with the kernel suites).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildMap, formatHtml, type ConnectivityMap } from '../../src/map/index.js';
import { Browser } from '../helpers/chromium.js';
import { mapSettingsFor, tenNamespaces } from '../helpers/map-cluster.js';

const OUT = resolve('.test-out');
let browser: Browser;
let map: ConnectivityMap;
let dir: string;

beforeAll(async () => {
  map = buildMap(tenNamespaces(), mapSettingsFor, { explain: 2000 }).map;
  dir = mkdtempSync(join(tmpdir(), 'nft-map-html-'));
  const page = join(dir, 'map.html');
  writeFileSync(page, formatHtml(map));
  browser = await Browser.launch();
  // Nothing may be fetched: the page is one file.
  await browser.send('Network.enable');
  await browser.open(`file://${page}`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the map page in headless chromium', () => {
  it('draws every group and every connection of the map, with its script run', async () => {
    expect(await browser.evaluate<string>('document.body.dataset.ready')).toBe('true');
    const ids = await browser.evaluate<string[]>("[...document.querySelectorAll('.group')].map((g) => g.dataset.id)");
    expect(ids.sort()).toEqual(map.groups.map((g) => g.id).sort());
    expect(ids).toEqual(expect.arrayContaining(['team-0/web', 'team-0/api', 'team-0/db', 'team-9/ui']));
    const edges = await browser.evaluate<string[]>(
      "[...document.querySelectorAll('.edge')].map((e) => e.dataset.from + ' -> ' + e.dataset.to)",
    );
    expect(edges.sort()).toEqual(map.edges.map((e) => `${e.from} -> ${e.to}`).sort());
    // From the spec: db admits api on its named port pg (5432); api admits the next team's web.
    expect(edges).toEqual(expect.arrayContaining(['team-0/api -> team-0/db', 'team-1/web -> team-0/api']));
    expect(edges).not.toContain('team-0/web -> team-0/db');
    expect(await browser.evaluate<number>("document.querySelectorAll('.ns').length")).toBe(11);
  });

  it('shows a group’s pods and policies, and a connection’s why text, on click', async () => {
    await browser.evaluate(
      "document.querySelector('.group[data-id=\"team-0/db\"]').dispatchEvent(new MouseEvent('click', { bubbles: true }))",
    );
    const group = await browser.evaluate<string>("document.getElementById('details').textContent");
    expect(group).toContain('team-0/db-0');
    expect(group).toContain('team-0/db-from-api');
    expect(group).toContain('team-0/db-egress-dns');
    await browser.evaluate(
      'document.querySelector(\'.edge[data-from="team-0/api"][data-to="team-0/db"]\').dispatchEvent(new MouseEvent(\'click\', { bubbles: true }))',
    );
    const edge = await browser.evaluate<string>("document.getElementById('details').textContent");
    expect(edge).toContain('tcp/5432');
    expect(edge).toContain('NetworkPolicy team-0/db-from-api rule ingress:0');
    expect(edge).toContain('ALLOWED');
  });

  it('hides a namespace, its groups and its connections when its box is unticked', async () => {
    await browser.evaluate('(() => { const b = document.querySelector(\'#filters input[data-ns="team-3"]\'); b.click(); })()');
    const shown = await browser.evaluate<{ groups: number; edges: number; hiddenEdges: number }>(`(() => ({
      groups: [...document.querySelectorAll('.group[data-ns="team-3"]')].filter((g) => getComputedStyle(g).display !== 'none').length,
      edges: [...document.querySelectorAll('.edge')].filter((e) => (e.dataset.nsFrom === 'team-3' || e.dataset.nsTo === 'team-3') && getComputedStyle(e).display !== 'none').length,
      hiddenEdges: [...document.querySelectorAll('.edge')].filter((e) => getComputedStyle(e).display === 'none').length,
    }))()`);
    expect(shown.groups).toBe(0);
    expect(shown.edges).toBe(0);
    expect(shown.hiddenEdges).toBe(map.edges.filter((e) => e.from.startsWith('team-3/') || e.to.startsWith('team-3/')).length);
    await browser.evaluate("document.getElementById('all').click()");
  });

  it('logs no console error and saves a screenshot', async () => {
    mkdirSync(OUT, { recursive: true });
    const png = await browser.screenshot(1600, 1000);
    writeFileSync(join(OUT, 'map-html.png'), png);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(browser.errors).toEqual([]);
    expect(browser.requests.filter((url) => !url.startsWith('file://'))).toEqual([]);
  });
});
