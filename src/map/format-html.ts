// The map as one self-contained HTML page: the SVG drawing, the map's data, and a little inline script and
// style (no network at view time: no CDN, no fonts, no images). Namespaces can be shown or hidden; a click
// on a group shows its pods and the policies judging it, a click on a connection the rules that allow it
// and the text `netfence why` prints for it.

import type { ConnectivityMap } from './model.js';
import { escapeXml, formatSvg } from './format-svg.js';

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
    if (g.kind==='outside') h += '<div>'+esc((g.cidrs||[]).join('; '))+'</div>';
    else h += '<div>'+g.pods.length+' pod(s): '+esc(g.pods.join(', '))+'</div><div>labels: '+esc(Object.keys(g.labels||{}).map(function(k){return k+'='+g.labels[k];}).join(', ')||'none')+'</div>';
    h += '<div>egress: <b>'+g.egress+'</b>'+(g.policies.egress.length?' by '+esc(g.policies.egress.join(', ')):'')+'</div>';
    h += '<div>ingress: <b>'+g.ingress+'</b>'+(g.policies.ingress.length?' by '+esc(g.policies.ingress.join(', ')):'')+'</div>';
    split.forEach(function(s){ h += '<p class="note">'+esc(s.workload)+' is drawn as '+s.groups.length+' groups: '+esc(s.why)+'</p>'; });
    if (g.ingress==='policed') h += '<p class="note">Every connection to it that is not listed below is denied ('+esc(g.policies.ingress.join(', ')||'isolated')+').</p>';
    h += '<h2>to ('+out.length+')</h2>'+out.map(function(e){ return '<div>&rarr; '+esc(e.to)+': '+esc(ports(e.ports))+'</div>'; }).join('');
    h += '<h2>from ('+inn.length+')</h2>'+inn.map(function(e){ return '<div>&larr; '+esc(e.from)+': '+esc(ports(e.ports))+'</div>'; }).join('');
    details.innerHTML = h;
  }
  function showEdge(i){
    var e = data.edges[i]; clear();
    document.querySelectorAll('.edge').forEach(function(x){ x.classList.add(x.dataset.edge===String(i)?'on':'dim'); });
    var h = '<h2>'+esc(e.from)+' &rarr; '+esc(e.to)+'</h2><div>allowed: '+esc(ports(e.ports))+'</div>';
    e.because.forEach(function(b){ h += '<p>'+esc(ports(b.ports))+':<br>egress: '+esc(b.egress)+'<br>ingress: '+esc(b.ingress)+'</p>'; });
    (e.why||[]).forEach(function(w){ h += '<pre>'+esc(w)+'</pre>'; });
    details.innerHTML = h;
  }
  document.querySelectorAll('.group').forEach(function(el){ el.addEventListener('click', function(ev){ ev.stopPropagation(); showGroup(el.dataset.id); }); });
  document.querySelectorAll('.edge').forEach(function(el){ el.addEventListener('click', function(ev){ ev.stopPropagation(); showEdge(Number(el.dataset.edge)); }); });
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
const scriptJson = (value: unknown): string => JSON.stringify(value).replace(/</g, '\\u003c');

export function formatHtml(map: ConnectivityMap, title = 'netfence map'): string {
  const pods = map.groups.filter((g) => g.kind === 'pods');
  const summary = `${pods.length} groups in ${new Set(pods.map((g) => g.namespace)).size} namespaces · ${map.edges.length} connections · IPv${map.family}`;
  const splits = map.splits.map((s) => `<li>${escapeXml(s.workload)} → ${s.groups.length} groups: ${escapeXml(s.why)}</li>`).join('');
  return `<!DOCTYPE html>
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
<div id="details"></div>
</div>
<div id="canvas">
${formatSvg(map, false)}
</div>
<script type="application/json" id="map-data">${scriptJson(map)}</script>
<script>${SCRIPT}</script>
</body></html>
`;
}
