// Whether a config layer certainly passes CONFIG_LAYER_SCHEMA, without ajv: loading ajv and compiling
// the schema costs ~40 ms of CPU at every command start, and a layer of a few flags takes microseconds
// to check. Only the keywords that schema uses are understood; any other keyword, or any doubt, answers
// false and ajv decides (and words the errors). So `true` here must imply ajv's `true`; a unit test
// (fits-schema.test.ts) holds the two together on valid and invalid values of every key.

type Schema = Readonly<Record<string, unknown>>;
export type Formats = Readonly<Record<string, (text: string) => boolean>>;

const KNOWN = new Set(['type', 'minLength', 'maxLength', 'pattern', 'enum', 'format', 'items', 'uniqueItems', 'minimum', 'maximum']);

const patterns = new Map<string, RegExp>();

function typeFits(type: string, v: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'integer':
      return Number.isInteger(v);
    case 'array':
      return Array.isArray(v);
    default:
      return false;
  }
}

/** Code points, as JSON Schema's minLength/maxLength count them. */
const codePoints = (s: string): number => [...s].length;

export function fits(schema: Schema, v: unknown, formats: Formats): boolean {
  for (const key of Object.keys(schema)) if (!KNOWN.has(key)) return false;
  const type = schema['type'];
  if (type !== undefined) {
    const types = Array.isArray(type) ? (type as string[]) : [type as string];
    if (!types.some((t) => typeFits(t, v))) return false;
  }
  if (schema['enum'] !== undefined && !(schema['enum'] as unknown[]).includes(v)) return false;
  if (typeof v === 'string') {
    if (typeof schema['minLength'] === 'number' && codePoints(v) < schema['minLength']) return false;
    if (typeof schema['maxLength'] === 'number' && codePoints(v) > schema['maxLength']) return false;
    const pattern = schema['pattern'];
    if (typeof pattern === 'string') {
      let re = patterns.get(pattern);
      if (!re) patterns.set(pattern, (re = new RegExp(pattern, 'u')));
      if (!re.test(v)) return false;
    }
    const format = schema['format'];
    if (format !== undefined && (typeof format !== 'string' || !formats[format]?.(v))) return false;
  }
  if (typeof v === 'number') {
    if (typeof schema['minimum'] === 'number' && v < schema['minimum']) return false;
    if (typeof schema['maximum'] === 'number' && v > schema['maximum']) return false;
  }
  if (Array.isArray(v)) {
    const items = schema['items'] as Schema | undefined;
    if (items !== undefined && !v.every((x) => fits(items, x, formats))) return false;
    // Only strings are compared for uniqueness here (what the schema's lists hold).
    if (schema['uniqueItems'] === true && (!v.every((x) => typeof x === 'string') || new Set(v).size !== v.length)) return false;
  }
  return true;
}

/** An object layer against `{ type: 'object', additionalProperties: false, properties }`. */
export function layerFits(schema: Schema, layer: Readonly<Record<string, unknown>>, formats: Formats): boolean {
  const keys = Object.keys(schema);
  if (keys.some((k) => k !== 'type' && k !== 'additionalProperties' && k !== 'properties')) return false;
  if (schema['type'] !== 'object' || schema['additionalProperties'] !== false) return false;
  if (typeof layer !== 'object' || layer === null || Array.isArray(layer)) return false;
  const properties = schema['properties'] as Readonly<Record<string, Schema>>;
  for (const key in layer) {
    const value = layer[key];
    // ajv skips a property whose value is undefined, but additionalProperties still counts its key.
    if (!Object.prototype.hasOwnProperty.call(properties, key)) return false;
    if (value !== undefined && !fits(properties[key]!, value, formats)) return false;
  }
  return true;
}
