// The `netfence.io/mode` annotation of a NetworkPolicy or ClusterNetworkPolicy: `enforce` (the default)
// or `audit` (programmed, not enforced; docs/audit.md). Any other value is enforced — the closed
// choice, as an audit the operator did not quite ask for would leave traffic open — with a warning.

import type { Problem } from '../model/index.js';

export const MODE_ANNOTATION = 'netfence.io/mode';

/** `{ audit: true }` for an audited object, `{}` otherwise; a value that is neither mode is reported. */
export function readPolicyMode(meta: Record<string, unknown>, object: () => string): { mode: { audit?: true }; problems: Problem[] } {
  const annotations = meta['annotations'];
  if (annotations === null || typeof annotations !== 'object' || Array.isArray(annotations)) return { mode: {}, problems: [] };
  const value = (annotations as Record<string, unknown>)[MODE_ANNOTATION];
  if (value === undefined || value === 'enforce') return { mode: {}, problems: [] };
  if (value === 'audit') return { mode: { audit: true }, problems: [] };
  const problem: Problem = {
    object: object(),
    field: `metadata.annotations["${MODE_ANNOTATION}"]`,
    message: `${JSON.stringify(value).slice(0, 80)} is not a mode (audit or enforce); the policy is enforced`,
    severity: 'warning',
  };
  return { mode: {}, problems: [problem] };
}
