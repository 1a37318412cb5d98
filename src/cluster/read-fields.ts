// The plain fields every object converter reads leniently (convert.ts, policy-convert.ts, cnp-convert.ts, and
// slim.ts as it cuts objects down): what has the wrong type reads as absent or as the documented default, never
// throws.

import type { Labels, Protocol } from '../model/index.js';

/** The namespace kubectl puts a namespaced object in when its manifest names none. */
export const DEFAULT_NAMESPACE = 'default';

export function readProtocol(v: unknown): Protocol {
  return v === 'UDP' || v === 'SCTP' ? v : 'TCP';
}

export function readLabels(v: unknown): Labels {
  const out: Record<string, string> = {};
  const labels = record(v);
  if (!labels) return out;
  // Indexed: every pod's labels come through here (10,000 pods), and commands run this code unoptimised.
  const keys = Object.keys(labels);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const val = labels[k];
    if (typeof val !== 'string') continue;
    // `out.__proto__ = val` would set the prototype (a string: ignored) and lose the key: a selector asking for
    // it would then ask for nothing and select every pod. Kept as the plain key it is, as JSON.parse keeps it.
    if (k === '__proto__') Object.defineProperty(out, k, { value: val, enumerable: true, writable: true, configurable: true });
    else out[k] = val;
  }
  return out;
}

export function namespaceOf(meta: Record<string, unknown> | undefined): string {
  const ns = meta?.['namespace'];
  return typeof ns === 'string' && ns !== '' ? ns : DEFAULT_NAMESPACE;
}

export function record(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

export function array(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}
