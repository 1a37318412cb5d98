// The largest functions under a folder, by lines from signature to closing brace: what the codebase review
// reads first. Usage: node --import ./scripts/register-ts.mjs scripts/largest-functions.ts [DIR (src)] [N (12)]

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = process.argv[2] ?? 'src';
const count = Number(process.argv[3] ?? 12);
const found: { lines: number; where: string }[] = [];

function walk(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.ts')) measure(path);
  }
}

function measure(path: string): void {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const visit = (node: ts.Node, owner: string | undefined): void => {
    let name: string | undefined;
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.body) name = node.name?.getText();
    else if (ts.isVariableDeclaration(node) && node.initializer && ts.isFunctionLike(node.initializer)) name = node.name.getText();
    if (name) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
      found.push({ lines, where: `${relative(root, path)} ${owner ? `${owner}.` : ''}${name}` });
    }
    const inner = ts.isClassDeclaration(node) ? node.name?.getText() : owner;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, undefined);
}

walk(root);
for (const { lines, where } of found.sort((a, b) => b.lines - a.lines).slice(0, count)) console.log(`${lines} ${where}`);
