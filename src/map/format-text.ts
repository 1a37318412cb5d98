// The map as Markdown (for a pull-request comment or a CI log) and as Graphviz dot.

import { collect, type Out } from './format-json.js';
import { liveSummary, outsideText } from './format-svg.js';
import type { LiveEdge, LiveOverlay } from './live.js';
import type { ConnectivityMap, MapEdge, MapGroup } from './model.js';
import { rangesText } from './ports.js';

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export const formatMarkdown = (map: ConnectivityMap, live?: LiveOverlay): string => collect((out) => writeMarkdown(map, out, live));

/** formatMarkdown's text, handed to `out` a line at a time (a connection is a line). */
export function writeMarkdown(map: ConnectivityMap, out: Out, live?: LiveOverlay): void {
  const pods = map.groups.filter((g) => g.kind === 'pods');
  const outside = map.groups.filter((g) => g.kind === 'outside');
  const line = (text: string) => out(`${text}\n`);
  const lines = { push: (...texts: string[]) => texts.forEach(line) };
  lines.push(
    `# netfence map (IPv${map.family})`,
    '',
    `${pods.length} groups of pods in ${new Set(pods.map((g) => g.namespace)).size} namespaces, ${outside.length} outside blocks, ${map.edges.length} connections listed.`,
    'Groups whose egress is open reach groups whose ingress is open on every port; those connections are not listed.',
    '',
    '## Groups',
    '',
    '| group | pods | egress | ingress | policies |',
    '|---|---|---|---|---|',
  );
  for (const g of map.groups)
    line(
      `| ${cell(g.id)} | ${g.kind === 'outside' ? cell(g.domainNames ? `${g.domainNames.join(', ')} (after a lookup)` : outsideText(g, '; ')) : g.pods.length} | ${g.egress} | ${g.ingress} | ${cell(policiesText(g))} |`,
    );
  lines.push('', '## Connections', '', '| from | to | allowed | because |', '|---|---|---|---|');
  for (const e of map.edges) line(`| ${cell(e.from)} | ${cell(e.to)} | ${cell(rangesText(e.ports))} | ${cell(becauseText(e))} |`);
  if (map.splits.length > 0) {
    lines.push('', '## Workloads drawn as several groups', '');
    for (const s of map.splits) lines.push(`- ${s.workload} → ${s.groups.join(', ')}: ${s.why}`);
  }
  if (map.skipped.length > 0) {
    lines.push('', '## Pods left out', '');
    for (const s of map.skipped) lines.push(`- ${s}`);
  }
  if (live) lines.push('', ...liveMarkdown(live));
}

/** What the map says of a pair the flow logs name. */
export const onMapText = (e: LiveEdge): string =>
  e.onMap === 'edge' ? 'listed connection' : e.onMap === 'open' ? 'allowed (open to open)' : 'nothing allowed';

function liveMarkdown(live: LiveOverlay): string[] {
  const lines = ['## Live: the flow logs', ''];
  for (const n of live.nodes)
    lines.push(n.error !== undefined ? `- ${n.node}: **not read**: ${cell(n.error)}` : `- ${n.node}: ${n.records} records read`);
  lines.push(
    '',
    `${live.edges.length} pairs of groups with drops or audit would-deny records; ${live.edges.filter((e) => e.contradictions > 0).length} disagree with the map.`,
    '',
    '| from | to | on the map | dropped | would deny | disagrees | latest |',
    '|---|---|---|---|---|---|---|',
    ...live.edges.map((e) => {
      const s = e.samples[0];
      const latest = s
        ? `${s.connection} ${s.reason} on ${s.node} at ${s.seen}${s.contradicts !== undefined ? `: ${s.contradicts}` : ''}`
        : '';
      return `| ${cell(e.from)} | ${cell(e.to)} | ${onMapText(e)} | ${e.drops} | ${e.wouldDeny} | ${e.contradictions > 0 ? `**${e.contradictions}**` : '0'} | ${cell(latest)} |`;
    }),
  );
  if (live.unplacedCount > 0) {
    lines.push('', `### Records on no pair of groups (${live.unplacedCount})`, '');
    for (const u of live.unplaced) lines.push(`- ${u.connection} ${u.src} -> ${u.dst} ${u.reason} on ${u.node}: ${u.why}`);
  }
  return lines;
}

export function policiesText(g: MapGroup): string {
  const parts: string[] = [];
  if (g.policies.egress.length > 0) parts.push(`egress: ${g.policies.egress.join(', ')}`);
  if (g.policies.ingress.length > 0) parts.push(`ingress: ${g.policies.ingress.join(', ')}`);
  return parts.join('; ');
}

export const becauseText = (e: MapEdge): string =>
  e.because.map((b) => `${rangesText(b.ports)}: egress ${b.egress}; ingress ${b.ingress}`).join(' / ');

const quote = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

export const formatDot = (map: ConnectivityMap, live?: LiveOverlay): string => collect((out) => writeDot(map, out, live));

/** formatDot's text, handed to `out` a line at a time. */
export function writeDot(map: ConnectivityMap, out: Out, live?: LiveOverlay): void {
  const lines = { push: (...texts: string[]) => texts.forEach((text) => out(`${text}\n`)) };
  lines.push('digraph netfence_map {', '  rankdir=LR;', '  node [shape=box, style=rounded, fontname="sans-serif"];');
  const byNamespace = new Map<string, MapGroup[]>();
  for (const g of map.groups) {
    const ns = g.namespace ?? '(outside)';
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), g]);
  }
  let i = 0;
  for (const [ns, groups] of byNamespace) {
    lines.push(`  subgraph cluster_${i++} {`, `    label=${quote(ns)};`);
    for (const g of groups) {
      const label =
        g.kind === 'outside'
          ? `${outsideText(g, '\\n')}${g.domainNames ? '\\n(after a lookup)' : ''}`
          : `${g.id.slice(ns.length + 1)}\\n${g.pods.length} pod${g.pods.length === 1 ? '' : 's'}`;
      lines.push(
        `    ${quote(g.id)} [label=${quote(label).replace(/\\\\n/g, '\\n')}${g.ingress === 'policed' ? ', color=firebrick' : ''}];`,
      );
    }
    lines.push('  }');
  }
  const liveOf = new Map((live?.edges ?? []).map((e) => [`${e.from}\0${e.to}`, e]));
  for (const e of map.edges) {
    const l = liveOf.get(`${e.from}\0${e.to}`);
    lines.push(
      `  ${quote(e.from)} -> ${quote(e.to)} [label=${quote(`${rangesText(e.ports)}${l ? `\n${liveSummary(l)}` : ''}`).replace(/\n/g, '\\n')}${l ? liveStyle(l) : ''}];`,
    );
  }
  // Pairs the flow logs name that the map lists no connection for: dashed.
  for (const l of live?.edges ?? [])
    if (l.onMap !== 'edge')
      lines.push(`  ${quote(l.from)} -> ${quote(l.to)} [style=dashed, label=${quote(liveSummary(l))}${liveStyle(l)}];`);
  lines.push('}');
}

const liveStyle = (l: LiveEdge): string =>
  `, color=${l.drops > 0 ? 'red' : 'darkorange'}, fontcolor=${l.drops > 0 ? 'red' : 'darkorange'}${l.contradictions > 0 ? ', penwidth=3' : ''}`;
