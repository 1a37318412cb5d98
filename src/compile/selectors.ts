// Label selectors: matching (metav1.LabelSelector semantics) and a canonical text used as a set key.

import type { LabelSelector, Labels, SelectorRequirement } from '../model/index.js';

// "matchLabels is a map of {key,value} pairs. ... The requirements are ANDed." (metav1.LabelSelector)
// Asked once per policy and local pod of every node a map compiles: plain loops, nothing allocated per call.
export function selectorMatches(selector: LabelSelector, labels: Labels): boolean {
  const matchLabels = selector.matchLabels;
  for (const key in matchLabels) {
    if (Object.hasOwn(matchLabels, key) && labels[key] !== matchLabels[key]) return false;
  }
  for (const req of selector.matchExpressions) if (!requirementMatches(req, labels)) return false;
  return true;
}

/** A selector read once for matching many label sets: its matchLabels as a list. */
export interface SelectorMatcher {
  readonly labels: readonly (readonly [string, string])[];
  readonly expressions: readonly SelectorRequirement[];
}

export const selectorMatcher = (selector: LabelSelector): SelectorMatcher => ({
  labels: Object.entries(selector.matchLabels),
  expressions: selector.matchExpressions,
});

/** selectorMatches by a matcher: no walk over the selector's own keys on every call. */
export function matcherMatches(matcher: SelectorMatcher, labels: Labels): boolean {
  for (const [key, value] of matcher.labels) if (labels[key] !== value) return false;
  for (const req of matcher.expressions) if (!requirementMatches(req, labels)) return false;
  return true;
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

/**
 * One text per meaning: `matchLabels {a: 1}` and `matchExpressions [a In (1)]` stay distinct (cheap and
 * still correct: a duplicate set costs memory, never a wrong verdict), but key and value order never matter.
 */
export function canonicalSelector(s: LabelSelector): string {
  // Selectors are immutable values, asked for again on every set request: build each text once.
  let text = canonicalTexts.get(s);
  if (text === undefined) canonicalTexts.set(s, (text = canonicalText(s)));
  return text;
}

const canonicalTexts = new WeakMap<LabelSelector, string>();

function canonicalText(s: LabelSelector): string {
  const labels = Object.keys(s.matchLabels)
    .sort()
    .map((k) => `${quoted(k)}=${quoted(s.matchLabels[k]!)}`);
  const exprs = s.matchExpressions
    .map((r) => `${quoted(r.key)} ${r.operator}${r.values.length ? ` (${[...new Set(r.values)].sort().map(quoted).join(',')})` : ''}`)
    .sort();
  const parts = [...labels, ...exprs];
  return parts.length === 0 ? '{}' : `{${parts.join(', ')}}`;
}

// Label keys and values the API server accepts use only these characters, so they stay readable as they are.
// Anything else (a value "a,c", a key with "=" or a space) is JSON-quoted: without that, `In ["a,c"]` and
// `In [a, c]` printed the same text and shared one set, and the second selector matched the first's pods.
const PLAIN = /^[A-Za-z0-9_./-]*$/;
const quoted = (text: string): string => (PLAIN.test(text) ? text : JSON.stringify(text));

/** Problems with a selector that the API server would have rejected. */
export function selectorErrors(s: LabelSelector): { field: string; message: string }[] {
  const errors: { field: string; message: string }[] = [];
  for (const [key, value] of Object.entries(s.matchLabels)) {
    const field = `matchLabels[${JSON.stringify(key)}]`;
    if (!isLabelKey(key)) errors.push({ field, message: `"${key}" is not a valid label key` });
    if (!isLabelValue(value)) errors.push({ field, message: `"${value}" is not a valid label value` });
  }
  s.matchExpressions.forEach((r, i) => {
    const field = `matchExpressions[${i}]`;
    if (!isLabelKey(r.key)) errors.push({ field: `${field}.key`, message: `"${r.key}" is not a valid label key` });
    r.values.forEach((v, j) => {
      if (!isLabelValue(v)) errors.push({ field: `${field}.values[${j}]`, message: `"${v}" is not a valid label value` });
    });
    if ((r.operator === 'In' || r.operator === 'NotIn') && r.values.length === 0) {
      errors.push({ field: `${field}.values`, message: `operator ${r.operator} needs at least one value` });
    }
    if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && r.values.length > 0) {
      errors.push({ field: `${field}.values`, message: `operator ${r.operator} takes no values` });
    }
  });
  return errors;
}

// apimachinery IsValidLabelValue / IsQualifiedName: "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", at most 63
// characters; a key may carry a DNS-subdomain prefix and "/". The API server rejects selectors with others.
const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isLabelValue(value: string): boolean {
  return value === '' || (value.length <= 63 && NAME.test(value));
}

function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return false;
  return name.length > 0 && name.length <= 63 && NAME.test(name);
}
