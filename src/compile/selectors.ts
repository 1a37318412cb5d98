// Label selectors: matching (metav1.LabelSelector semantics) and a canonical text used as a set key.

import type { LabelSelector, Labels, SelectorRequirement } from '../model/index.js';

// "matchLabels is a map of {key,value} pairs. ... The requirements are ANDed." (metav1.LabelSelector)
export function selectorMatches(selector: LabelSelector, labels: Labels): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels)) {
    if (labels[key] !== value) return false;
  }
  return selector.matchExpressions.every((req) => requirementMatches(req, labels));
}

function requirementMatches(req: SelectorRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case 'In':
      return has && req.values.includes(labels[req.key] as string);
    // "NotIn ... the label key may not exist or its value is not in the set" (labels.Requirement)
    case 'NotIn':
      return !has || !req.values.includes(labels[req.key] as string);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

export const isEmptySelector = (s: LabelSelector): boolean =>
  Object.keys(s.matchLabels).length === 0 && s.matchExpressions.length === 0;

/**
 * One text per meaning: `matchLabels {a: 1}` and `matchExpressions [a In (1)]` stay distinct (cheap and
 * still correct: a duplicate set costs memory, never a wrong verdict), but key and value order never matter.
 */
export function canonicalSelector(s: LabelSelector): string {
  const labels = Object.keys(s.matchLabels)
    .sort()
    .map((k) => `${k}=${s.matchLabels[k]}`);
  const exprs = s.matchExpressions
    .map((r) => `${r.key} ${r.operator}${r.values.length ? ` (${[...new Set(r.values)].sort().join(',')})` : ''}`)
    .sort();
  const parts = [...labels, ...exprs];
  return parts.length === 0 ? '{}' : `{${parts.join(', ')}}`;
}

/** Problems with a selector that the API server would have rejected. */
export function selectorErrors(s: LabelSelector): { field: string; message: string }[] {
  const errors: { field: string; message: string }[] = [];
  s.matchExpressions.forEach((r, i) => {
    const field = `matchExpressions[${i}]`;
    if ((r.operator === 'In' || r.operator === 'NotIn') && r.values.length === 0) {
      errors.push({ field: `${field}.values`, message: `operator ${r.operator} needs at least one value` });
    }
    if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && r.values.length > 0) {
      errors.push({ field: `${field}.values`, message: `operator ${r.operator} takes no values` });
    }
  });
  return errors;
}
