// Minimal ESM loader: strips types with @swc/core and maps `./x.js` imports to `./x.ts` when only the .ts exists.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

export async function resolve(specifier, context, next) {
  if (specifier.endsWith('.js') && context.parentURL && (specifier.startsWith('.') || specifier.startsWith('/'))) {
    const url = new URL(specifier, context.parentURL);
    const ts = url.pathname.replace(/\.js$/, '.ts');
    if (!existsSync(url.pathname) && existsSync(ts)) return next(new URL(`file://${ts}`).href, context);
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const source = await readFile(fileURLToPath(url), 'utf8');
  const out = await transform(source, {
    filename: fileURLToPath(url),
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  });
  return { format: 'module', source: out.code, shortCircuit: true };
}
