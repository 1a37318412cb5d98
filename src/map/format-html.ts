// The map as one self-contained HTML page: the SVG drawing, the map's data, and a little inline script and
// style (no network at view time: no CDN, no fonts, no images). Namespaces can be shown or hidden; a click
// on a group shows its pods and the policies judging it, a click on a connection the rules that allow it
// and the text `netfence why` prints for it. With the live overlay, the flow logs' records of a pair are in
// its panel, and the side says which nodes were read.

import type { LiveOverlay } from './live.js';
import type { ConnectivityMap } from './model.js';
import { collect, writeJson, type Out } from './format-json.js';
import { escapeXml, liveSummary, writeSvg } from './format-svg.js';

const STYLE = `
body{margin:0;font-family:sans-serif;font-size:13px;color:#222;display:flex;height:100vh}
#side{width:380px;min-width:380px;overflow:auto;border-right:1px solid #ccd;padding:10px;box-sizing:border-box;background:#fafbfc}
#canvas{flex:1;overflow:auto}
h1{font-size:16px;margin:0 0 6px}
h2{font-size:13px;margin:12px 0 4px}
#filters label{display:block;white-space:nowrap}
#details pre{white-space:pre-wrap;font-size:11px;background:#fff;border:1px solid #dde;padding:6px}
.group{cursor:pointer}.edge{cursor:pointer}
.edge.dim{opacity:.12}.group.dim{opacity:.3}
.edge.on path{stroke:#d2691e;stroke-opacity:1;stroke-width:2.4}
.group.on circle{stroke:#d2691e;stroke-width:3.5}
.hidden{display:none}
.note{color:#555}
.bad{color:#b22222}
.rec{border-left:3px solid #d62728;padding:2px 6px;margin:4px 0;font-size:12px}
.rec.audit{border-left-color:#ff8c00}
`;

const SCRIPT = `
(function(){
  var data = JSON.parse(document.getElementById('map-data').textContent);
  var groups = {}; data.groups.forEach(function(g){ groups[g.id] = g; });
  var details = document.getElementById('details');
  var hidden = {};
  function esc(s){ return String(s).replace(/[&<>"]/g,function(c){return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];}); }
  function ports(list){ return list.length ? list.map(function(r){ return r.from===1&&r.to===65535 ? r.proto+' (all ports)' : r.proto+'/'+(r.from===r.to?r.from:r.from+'-'+r.to); }).join(', ') : 'nothing'; }
  function clear(){ document.querySelectorAll('.on,.dim').forEach(function(e){ e.classList.remove('on'); e.classList.remove('dim'); }); }
  function showGroup(id){
    var g = groups[id]; clear();
    document.querySelectorAll('.edge').forEach(function(e){ var on = e.dataset.from===id||e.dataset.to===id; e.classList.add(on?'on':'dim'); });
    document.querySelector('.group[data-id="'+CSS.escape(id)+'"]').classList.add('on');
    var out = data.edges.filter(function(e){ return e.from===id; }), inn = data.edges.filter(function(e){ return e.to===id; });
    var split = data.splits.filter(function(s){ return s.groups.indexOf(id)>=0; });
    var h = '<h2>'+esc(g.id)+'</h2>';
    if (g.domainNames) h += '<div>ClusterNetworkPolicy domainNames: '+esc(g.domainNames.join(', '))+'</div><p class="note">The addresses a lookup of these names answered (each subject pod learns its own). Traced with a stand-in address outside every CIDR the policies name.</p>';
    else if (g.kind==='outside') h += '<div>'+esc((g.cidrs||[]).join('; '))+'</div>';
    else h += (g.owner?'<div>owner: '+esc(g.owner.kind+' '+g.owner.name)+'</div>':'')+'<div>'+g.pods.length+' pod(s): '+esc(g.pods.join(', '))+'</div><div>labels: '+esc(Object.keys(g.labels||{}).map(function(k){return k+'='+g.labels[k];}).join(', ')||'none')+'</div>';
    h += '<div>egress: <b>'+g.egress+'</b>'+(g.policies.egress.length?' by '+esc(g.policies.egress.join(', ')):'')+'</div>';
    h += '<div>ingress: <b>'+g.ingress+'</b>'+(g.policies.ingress.length?' by '+esc(g.policies.ingress.join(', ')):'')+'</div>';
    split.forEach(function(s){ h += '<p class="note">'+esc(s.workload)+' is drawn as '+s.groups.length+' groups: '+esc(s.why)+'</p>'; });
    if (g.ingress==='policed') h += '<p class="note">Every connection to it that is not listed below is denied ('+esc(g.policies.ingress.join(', ')||'isolated')+').</p>';
    h += '<h2>to ('+out.length+')</h2>'+out.map(function(e){ return '<div>&rarr; '+esc(e.to)+': '+esc(ports(e.ports))+'</div>'; }).join('');
    h += '<h2>from ('+inn.length+')</h2>'+inn.map(function(e){ return '<div>&larr; '+esc(e.from)+': '+esc(ports(e.ports))+'</div>'; }).join('');
    details.innerHTML = h;
  }
  var onMap = { edge: 'a listed connection', open: 'allowed on every port (open egress to open ingress)', none: 'nothing is allowed between them' };
  function liveHtml(li){
    if (li===undefined || !data.live) return '';
    var l = data.live.edges[Number(li)];
    var h = '<h2>Flow logs</h2><div>dropped: '+l.drops+' packet(s); an audited policy would deny: '+l.wouldDeny+'</div>';
    if (l.contradictions) h += '<p class="bad"><b>'+l.contradictions+' record(s) disagree with the map</b></p>';
    l.samples.forEach(function(s){
      h += '<div class="rec'+(s.reason==='would-deny'?' audit':'')+'">'+esc(s.seen+' on '+s.node+': '+s.connection+' '+s.src+' \u2192 '+s.dst+', '+s.direction+', '+s.reason+(s.count>1?' \u00d7'+s.count:''));
      if (s.contradicts) h += '<br><b class="bad">'+esc(s.contradicts)+'</b>';
      h += '<br>'+esc(s.because)+'</div>';
    });
    return h;
  }
  function select(el){ document.querySelectorAll('.edge').forEach(function(x){ x.classList.add(x===el?'on':'dim'); }); }
  function showEdge(el){
    var i = Number(el.dataset.edge), e = data.edges[i]; clear(); select(el);
    var h = '<h2>'+esc(e.from)+' &rarr; '+esc(e.to)+'</h2><div>allowed: '+esc(ports(e.ports))+'</div>';
    e.because.forEach(function(b){ h += '<p>'+esc(ports(b.ports))+':<br>egress: '+esc(b.egress)+'<br>ingress: '+esc(b.ingress)+'</p>'; });
    h += liveHtml(el.dataset.live);
    (e.why||[]).forEach(function(w){ h += '<pre>'+esc(w)+'</pre>'; });
    details.innerHTML = h;
  }
  function showLive(el){
    var l = data.live.edges[Number(el.dataset.live)]; clear(); select(el);
    details.innerHTML = '<h2>'+esc(l.from)+' &rarr; '+esc(l.to)+'</h2><div>on the map: '+esc(onMap[l.onMap])+'</div>'+liveHtml(el.dataset.live);
  }
  document.querySelectorAll('.group').forEach(function(el){ el.addEventListener('click', function(ev){ ev.stopPropagation(); showGroup(el.dataset.id); }); });
  document.querySelectorAll('.edge').forEach(function(el){ el.addEventListener('click', function(ev){ ev.stopPropagation(); if (el.dataset.edge !== undefined) showEdge(el); else showLive(el); }); });
  function apply(){
    document.querySelectorAll('.ns,.group').forEach(function(el){ el.classList.toggle('hidden', !!hidden[el.dataset.ns]); });
    document.querySelectorAll('.edge').forEach(function(el){ el.classList.toggle('hidden', !!hidden[el.dataset.nsFrom] || !!hidden[el.dataset.nsTo]); });
  }
  var filters = document.getElementById('filters');
  var names = []; document.querySelectorAll('.ns').forEach(function(el){ names.push(el.dataset.ns); });
  names.forEach(function(n){
    var label = document.createElement('label'); var box = document.createElement('input');
    box.type = 'checkbox'; box.checked = true; box.dataset.ns = n;
    box.addEventListener('change', function(){ hidden[n] = !box.checked; apply(); });
    label.appendChild(box); label.appendChild(document.createTextNode(' '+n)); filters.appendChild(label);
  });
  document.getElementById('all').addEventListener('click', function(){ filters.querySelectorAll('input').forEach(function(b){ b.checked = true; hidden[b.dataset.ns] = false; }); apply(); });
  document.getElementById('none').addEventListener('click', function(){ filters.querySelectorAll('input').forEach(function(b){ b.checked = false; hidden[b.dataset.ns] = true; }); apply(); });
  document.getElementById('canvas').addEventListener('click', function(){ clear(); details.innerHTML = ''; });
  document.body.dataset.ready = 'true';
})();
`;

/** JSON inside a script element: `</script>` and `<!--` cannot end it early. */
const scriptJson = (value: unknown, out: Out): void => writeJson(value, (text) => out(text.replace(/</g, '\\u003c')));

/** The side's account of the overlay: nodes read and not, pairs, disagreements, records on no pair. */
function liveSide(live: LiveOverlay): string {
  const nodes = live.nodes
    .map(
      (n) =>
        `<li${n.error !== undefined ? ' class="bad"' : ''}>${escapeXml(n.node)}: ${n.error !== undefined ? `not read: ${escapeXml(n.error)}` : `${n.records} records`}</li>`,
    )
    .join('');
  const disagree = live.edges.filter((e) => e.contradictions > 0);
  const unplaced = live.unplaced
    .map((u) => `<li>${escapeXml(`${u.connection} ${u.src} → ${u.dst} ${u.reason} on ${u.node}: ${u.why}`)}</li>`)
    .join('');
  return (
    `<h2>Live: the flow logs</h2><ul class="note" id="live-nodes">${nodes}</ul>` +
    `<div class="note">${live.edges.length} pairs with drops (red) or audit would-deny (orange); dashed: no connection listed there.</div>` +
    (disagree.length > 0
      ? `<div class="bad" id="live-disagree">Disagree with the map: ${disagree.map((e) => escapeXml(`${e.from} → ${e.to} (${liveSummary(e)})`)).join('; ')}</div>`
      : '') +
    (live.unplacedCount > 0 ? `<h2>Records on no pair of groups (${live.unplacedCount})</h2><ul class="note">${unplaced}</ul>` : '')
  );
}

export const formatHtml = (map: ConnectivityMap, live?: LiveOverlay, title = 'netfence map'): string =>
  collect((out) => writeHtml(map, out, live, title));

/** formatHtml's text, handed to `out` in pieces: the drawing a line at a time, the data an element at a time. */
export function writeHtml(map: ConnectivityMap, out: Out, live?: LiveOverlay, title = 'netfence map'): void {
  const pods = map.groups.filter((g) => g.kind === 'pods');
  const summary = `${pods.length} groups in ${new Set(pods.map((g) => g.namespace)).size} namespaces · ${map.edges.length} connections · IPv${map.family}`;
  const splits = map.splits.map((s) => `<li>${escapeXml(s.workload)} → ${s.groups.length} groups: ${escapeXml(s.why)}</li>`).join('');
  out(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${STYLE}</style></head>
<body>
<div id="side">
<h1>${escapeXml(title)}</h1>
<div class="note">${escapeXml(summary)}</div>
<p class="note">Arrows are the connections the compiled rules allow (traced per node). A red ring: a policy judges the group's ingress. Groups whose egress is open reach groups whose ingress is open on every port; those arrows are not drawn. Click a group or an arrow.</p>
<h2>Namespaces <button id="all" type="button">all</button> <button id="none" type="button">none</button></h2>
<div id="filters"></div>
${splits ? `<h2>Workloads drawn as several groups</h2><ul class="note">${splits}</ul>` : ''}
${live ? liveSide(live) : ''}
<div id="details"></div>
</div>
<div id="canvas">
`);
  writeSvg(map, out, false, live);
  out(`
</div>
<script type="application/json" id="map-data">`);
  scriptJson(live ? { ...map, live } : map, out);
  out(`</script>
<script>${SCRIPT}</script>
</body></html>
`);
}
