// The map drawn: one box per namespace (and one for the outside world), its groups in a grid inside, each
// connection an arrow. Laid out here, so the SVG file and the HTML page (which adds filtering and details
// on click) show the same picture. Groups whose ingress a policy judges are drawn with a red ring. With the
// live overlay, a connection the flow logs recorded drops on is red (orange for audit would-deny only, thick
// when a record disagrees with the map), and a pair with records but no listed connection is a dashed arrow.

import type { LiveEdge, LiveOverlay } from './live.js';
import { collect, type Out } from './format-json.js';
import type { ConnectivityMap, MapGroup } from './model.js';
import { rangesText } from './ports.js';

const R = 13;
const CELL_W = 104;
const CELL_H = 66;
const PAD = 16;
const HEAD = 26;
const GAP = 24;
const MAX_WIDTH = 1200;

interface Box {
  readonly name: string;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
  readonly groups: readonly MapGroup[];
}

export interface Layout {
  readonly width: number;
  readonly height: number;
  readonly boxes: readonly Box[];
  readonly at: ReadonlyMap<string, { readonly x: number; readonly y: number }>;
}

export function layout(map: ConnectivityMap): Layout {
  const byNamespace = new Map<string, MapGroup[]>();
  for (const g of map.groups) {
    const ns = g.namespace ?? 'outside the cluster';
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), g]);
  }
  const names = [...byNamespace.keys()].sort((a, b) =>
    a === 'outside the cluster' ? 1 : b === 'outside the cluster' ? -1 : a < b ? -1 : 1,
  );
  const boxes: Box[] = [];
  const at = new Map<string, { x: number; y: number }>();
  let x = GAP;
  let y = GAP;
  let rowHeight = 0;
  for (const name of names) {
    const groups = byNamespace.get(name)!;
    const cols = Math.max(1, Math.min(groups.length, Math.ceil(Math.sqrt(groups.length * 1.6))));
    const rows = Math.ceil(groups.length / cols);
    const w = cols * CELL_W + 2 * PAD;
    const h = rows * CELL_H + HEAD + PAD;
    if (x + w > MAX_WIDTH && x > GAP) {
      x = GAP;
      y += rowHeight + GAP;
      rowHeight = 0;
    }
    boxes.push({ name, x, y, w, h, groups });
    groups.forEach((g, i) =>
      at.set(g.id, { x: x + PAD + (i % cols) * CELL_W + CELL_W / 2, y: y + HEAD + Math.floor(i / cols) * CELL_H + R + 8 }),
    );
    x += w + GAP;
    rowHeight = Math.max(rowHeight, h);
  }
  const width = Math.max(...boxes.map((b) => b.x + b.w), 200) + GAP;
  return { width, height: y + rowHeight + GAP, boxes, at };
}

export const escapeXml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const short = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

/** The path of an arrow from a to b (a loop when they are one group); it stops at the target's edge. */
function arrowPath(a: { x: number; y: number }, b: { x: number; y: number }, self: boolean): string {
  if (self) return `M${a.x - 6},${a.y - R} C${a.x - 30},${a.y - 48} ${a.x + 30},${a.y - 48} ${a.x + 6},${a.y - R}`;
  // Bend a little so A→B and B→A stay apart.
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const len = Math.max(1, Math.hypot(dx, dy));
  const ex = b.x - (dx / len) * (R + 2);
  const ey = b.y - (dy / len) * (R + 2);
  const mx = (a.x + ex) / 2 - (dy / len) * 18;
  const my = (a.y + ey) / 2 + (dx / len) * 18;
  return `M${a.x.toFixed(1)},${a.y.toFixed(1)} Q${mx.toFixed(1)},${my.toFixed(1)} ${ex.toFixed(1)},${ey.toFixed(1)}`;
}

/** Classes and stroke of a connection with flow-log records: red for drops, orange for would-deny only. */
function liveLook(l: LiveEdge): { cls: string; stroke: string; width: number } {
  const cls = ['live', l.drops > 0 ? 'dropped' : 'audited', ...(l.contradictions > 0 ? ['disagrees'] : [])].join(' ');
  return { cls, stroke: l.drops > 0 ? '#d62728' : '#ff8c00', width: l.contradictions > 0 ? 3.5 : 2 };
}

/** The SVG document (`standalone`: with its XML declaration and white background); `live`: the flow-log overlay. */
export const formatSvg = (map: ConnectivityMap, standalone = true, live?: LiveOverlay): string =>
  collect((out) => writeSvg(map, out, standalone, live));

/** formatSvg's text, handed to `write` a line at a time. */
export function writeSvg(map: ConnectivityMap, write: Out, standalone = true, live?: LiveOverlay): void {
  const l = layout(map);
  if (standalone) write('<?xml version="1.0" encoding="UTF-8"?>\n');
  const line = (text: string) => write(`${text}\n`);
  line(
    `<svg xmlns="http://www.w3.org/2000/svg" id="map" width="${l.width}" height="${l.height}" viewBox="0 0 ${l.width} ${l.height}" font-family="sans-serif" font-size="11">`,
  );
  line(
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#4a6fa5"/></marker></defs>',
  );
  if (standalone) line(`<rect width="100%" height="100%" fill="white"/>`);
  for (const b of l.boxes)
    line(
      `<g class="ns" data-ns="${escapeXml(b.name)}"><rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="8" fill="${b.name === 'outside the cluster' ? '#f3f0e8' : '#eef3f8'}" stroke="#9db0c6"/>` +
        `<text x="${b.x + 10}" y="${b.y + 17}" font-weight="bold" font-size="13">${escapeXml(short(b.name, Math.floor(b.w / 8)))}</text></g>`,
    );
  line('<g id="edges">');
  // By id: a search of the groups for each of 100,000 connections took seconds.
  const nsById = new Map<string, string>();
  for (const g of map.groups) if (!nsById.has(g.id)) nsById.set(g.id, escapeXml(g.namespace ?? 'outside the cluster'));
  const nsOf = (id: string) => nsById.get(id) ?? escapeXml('outside the cluster');
  // Each group's id escaped once, not once per connection.
  const escapedIds = new Map(map.groups.map((g) => [g.id, escapeXml(g.id)]));
  const idOf = (id: string) => escapedIds.get(id) ?? escapeXml(id);
  const liveAt = new Map((live?.edges ?? []).map((e, i) => [`${e.from}\0${e.to}`, i]));
  map.edges.forEach((e, i) => {
    const d = arrowPath(l.at.get(e.from)!, l.at.get(e.to)!, e.from === e.to);
    const li = liveAt.get(`${e.from}\0${e.to}`);
    const lv = li !== undefined ? live!.edges[li]! : undefined;
    const look = lv ? liveLook(lv) : undefined;
    const attrs = `class="edge${look ? ` ${look.cls}` : ''}" data-edge="${i}"${li !== undefined ? ` data-live="${li}"` : ''} data-from="${idOf(e.from)}" data-to="${idOf(e.to)}" data-ns-from="${nsOf(e.from)}" data-ns-to="${nsOf(e.to)}"`;
    const title = `<title>${escapeXml(`${e.from} → ${e.to}: ${rangesText(e.ports)}${lv ? ` (${liveSummary(lv)})` : ''}`)}</title>`;
    const stroke = look
      ? `stroke="${look.stroke}" stroke-opacity="0.9" stroke-width="${look.width}"`
      : 'stroke="#4a6fa5" stroke-opacity="0.55" stroke-width="1.3"';
    line(
      `<g ${attrs}>${title}<path d="${d}" fill="none" ${stroke} marker-end="url(#arrow)"/><path class="hit" d="${d}" fill="none" stroke="transparent" stroke-width="9"/></g>`,
    );
  });
  // Pairs the flow logs name that the map lists no connection for (denied there, or open to open).
  (live?.edges ?? []).forEach((lv, li) => {
    if (lv.onMap === 'edge') return;
    const d = arrowPath(l.at.get(lv.from)!, l.at.get(lv.to)!, lv.from === lv.to);
    const look = liveLook(lv);
    const attrs = `class="edge ${look.cls} unlisted" data-live="${li}" data-from="${escapeXml(lv.from)}" data-to="${escapeXml(lv.to)}" data-ns-from="${nsOf(lv.from)}" data-ns-to="${nsOf(lv.to)}"`;
    const title = `<title>${escapeXml(`${lv.from} → ${lv.to}: no connection listed (${liveSummary(lv)})`)}</title>`;
    line(
      `<g ${attrs}>${title}<path d="${d}" fill="none" stroke="${look.stroke}" stroke-opacity="0.9" stroke-width="${look.width}" stroke-dasharray="5 3" marker-end="url(#arrow)"/><path class="hit" d="${d}" fill="none" stroke="transparent" stroke-width="9"/></g>`,
    );
  });
  line('</g><g id="groups">');
  for (const g of map.groups) {
    const p = l.at.get(g.id)!;
    const name = g.kind === 'outside' ? outsideText(g, '; ') : g.id.slice((g.namespace ?? '').length + 1);
    const count = g.domainNames
      ? 'after a lookup'
      : g.kind === 'outside'
        ? 'outside'
        : `${g.pods.length} pod${g.pods.length === 1 ? '' : 's'}`;
    line(
      `<g class="group" data-id="${escapeXml(g.id)}" data-ns="${escapeXml(g.namespace ?? 'outside the cluster')}" tabindex="0"><title>${escapeXml(`${g.id} (${count})`)}</title>` +
        `<circle cx="${p.x}" cy="${p.y}" r="${R}" fill="${g.kind === 'outside' ? '#d9cfb5' : '#bcd3ea'}" stroke="${g.ingress === 'policed' ? '#b22222' : '#5a7897'}" stroke-width="${g.ingress === 'policed' ? 2.5 : 1.2}"/>` +
        `<text x="${p.x}" y="${p.y + R + 12}" text-anchor="middle">${escapeXml(short(name, 16))}</text>` +
        `<text x="${p.x}" y="${p.y + R + 24}" text-anchor="middle" fill="#667">${escapeXml(count)}</text></g>`,
    );
  }
  line('</g></svg>');
}

/** `dropped 3, would deny 1, 1 disagrees with the map`. */
export function liveSummary(l: LiveEdge): string {
  const parts = [l.drops > 0 ? `dropped ${l.drops}` : '', l.wouldDeny > 0 ? `would deny ${l.wouldDeny}` : ''];
  if (l.contradictions > 0) parts.push(`${l.contradictions} ${l.contradictions === 1 ? 'disagrees' : 'disagree'} with the map`);
  return parts.filter((p) => p !== '').join(', ');
}

/** What an outside group stands for: its blocks, or the `domainNames` a lookup answered. */
export const outsideText = (g: MapGroup, join: string): string => (g.domainNames ? g.domainNames.join(join) : (g.cidrs ?? []).join(join));
