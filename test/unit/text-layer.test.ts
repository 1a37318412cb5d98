// One netfilter text layer: save and restore text (iptables-save, iptables-restore payloads, ipset save and
// restore, nft scripts and nft's JSON) is read and written only in src/render/. Everything else works on what render/ parsed, so an
// iptables release that prints something differently is handled in one place.
//
// The check reads the literals of each file (strings, templates, regular expressions; never comments) and
// the calls that test a line's first character, looking for the markers only netfilter text has.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');
const TEXT_LAYER = join(SRC, 'render');

/** Markers of save/restore text in a literal, each with what it reads. */
const TEXT_MARKERS: readonly { readonly pattern: RegExp; readonly what: string }[] = [
  { pattern: /^\^?-[AIND] /, what: 'a rule or chain command line (-A/-I/-N/-D)' },
  { pattern: /^\^:|\^:\$\{|^:\$\{/, what: 'a chain declaration line (:CHAIN POLICY)' },
  { pattern: /\*filter(?:\\n|\n|$)|\^\\\*|^\*\w+\\n/, what: 'a table header (*filter)' },
  { pattern: /^COMMIT$|\nCOMMIT|\\nCOMMIT|\^COMMIT/, what: 'a table end (COMMIT)' },
  { pattern: /\^\(?(?:create|add)\b|\^\(\?:create|^(?:create|add) $/, what: 'an ipset save line (create/add)' },
  {
    pattern: /^(?:destroy|flush|swap|del|-X|-F) (?:\S|$)|\^\(?(?:\?:)?(?:destroy|flush|swap|del)\b/,
    what: 'an ipset restore command or a chain flush/delete (destroy/flush/swap/del, -X/-F)',
  },
  { pattern: /^\^#/, what: "a save's comment lines" },
  { pattern: /# Table `/, what: "iptables-nft's note on a table it cannot show" },
  { pattern: /-m comment --comment "/, what: 'the rule comment as printed' },
  { pattern: /(?:^|\n)(?:delete )?table (?:\S|$)/, what: 'an nft table command (table/delete table)' },
  { pattern: /^\s+chain (?:\S|$)|^chain \S+ \{/, what: 'an nft chain block' },
  { pattern: /type filter hook|; policy (?:accept|drop);/, what: "an nft base chain's hook" },
  {
    pattern: /\bether type\b|\bmeta [io]if(?:kind|name)\b|@th,\d+|\bcounter packets\b|\b(?:drop|accept) comment\b/,
    what: 'an nft rule statement',
  },
];

/** Keys only nft's JSON (`nft -j`) has: reading them is reading nft's output. */
const NFT_JSON_KEYS = new Set(['nftables']);

/** `line.startsWith('*')` and the like: the first character tells a save line's kind. */
const LINE_KIND_PREFIXES = new Set(['*', ':', '-']);

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });

function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) return node.text;
  if (ts.isRegularExpressionLiteral(node)) return node.text.slice(1, node.text.lastIndexOf('/'));
  return undefined;
}

/** `file:line: what` for each place in `file` that reads or writes netfilter text. */
export function textParsingIn(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) =>
    found.push(`${relative(ROOT, file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  const visit = (node: ts.Node): void => {
    const literal = literalText(node);
    if (literal !== undefined) {
      const marker = TEXT_MARKERS.find((m) => m.pattern.test(literal));
      if (marker) at(node, `${marker.what}: ${JSON.stringify(literal.slice(0, 50))}`);
    }
    if (
      (ts.isPropertyAccessExpression(node) || ts.isPropertySignature(node) || ts.isPropertyAssignment(node)) &&
      ts.isIdentifier(node.name) &&
      NFT_JSON_KEYS.has(node.name.text)
    )
      at(node, `nft's JSON output: .${node.name.text}`);
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'startsWith' &&
      node.arguments.length === 1 &&
      ts.isStringLiteralLike(node.arguments[0]!) &&
      LINE_KIND_PREFIXES.has(node.arguments[0].text)
    )
      at(node, `a line told by its first character: ${node.getText(source).slice(0, 50)}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('one netfilter text layer', () => {
  it('nothing outside src/render/ reads or writes save/restore text', () => {
    const outside = files(SRC).filter((f) => !f.startsWith(`${TEXT_LAYER}/`));
    expect(outside.flatMap((f) => textParsingIn(f, readFileSync(f, 'utf8')))).toEqual([]);
  });

  // The check itself: each kind of reader it exists to catch, and prose that only names the formats.
  it.each([
    ["if (line.startsWith('*')) table = line.slice(1);", 1],
    ["if (line === 'COMMIT') table = undefined;", 1],
    ['const hint = /^:(KUBE-IPTABLES-HINT) /m;', 1],
    ['const rules = (c: string) => new RegExp(`^-A ${c} `, "m");', 1],
    ["const empty = '*filter\\n:INPUT ACCEPT [0:0]\\nCOMMIT\\n';", 1],
    ["const sets = text.split('\\n').filter((l) => /^(create|add) /.test(l));", 1],
    ['const m = /^create (\\S+) \\S+(.*)$/.exec(l);', 1],
    ["const content = save.replace(/^#.*\\n?/gm, '');", 1],
    ['const bare = text.replace(/\\s*-m comment --comment "[^"]*"/, \'\');', 1],
    ['await kernel.ipsetRestore(`destroy ${name}\\n`);', 1],
    ['const text = `flush ${temp}\\nswap ${temp} ${name}\\n`;', 1],
    ["const line = 'del nf4s:abc 10.0.0.1';", 1],
    ['const lines = names.map((n) => `-X ${n}`);', 1],
    ['const gone = /^(?:destroy|swap) (\\S+)/.exec(line);', 1],
    ["const op: IpsetOp = { op: 'destroy', name };", 0],
    ['const script = `table bridge ${name}\\ndelete table bridge ${name}\\n`;', 2],
    ["const head = ['  chain prerouting {', '    type filter hook prerouting priority -300; policy accept;'];", 2],
    ['const rule = `    ether type arp ${drop}`;', 1],
    ['const counter = `counter packets ${n} bytes ${b}`;', 1],
    ['const doc = JSON.parse(json) as { nftables?: unknown[] };', 1],
    ['for (const item of doc.nftables ?? []) count(item);', 1],
    ["const which = { field: 'ether-type', value: 'arp' };", 0],
    ["// iptables-save prints '-A FORWARD …' and COMMIT\nthrow new Error('no *filter table in the input');", 0],
  ])('%s → %d finding(s)', (code, n) => {
    expect(textParsingIn(join(SRC, 'example.ts'), code)).toHaveLength(n);
  });
});
