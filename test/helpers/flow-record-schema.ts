// docs/flow-record.schema.json compiled with ajv, for the tests that hold the daemon's flow-log lines (and the
// shipping examples) to the schema the docs publish.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';

export const FLOW_RECORD_SCHEMA = JSON.parse(readFileSync(join(process.cwd(), 'docs/flow-record.schema.json'), 'utf8')) as {
  readonly required: readonly string[];
  readonly properties: Readonly<Record<string, unknown>>;
  readonly definitions: { readonly end: { readonly oneOf: readonly { readonly properties: Readonly<Record<string, unknown>> }[] } };
};

// RFC 3339 as JSON Schema's date-time means it (ajv-formats is not a dependency of ours).
const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;
const ajv = new Ajv({
  allErrors: true,
  strict: true,
  formats: { 'date-time': (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)) },
});
const validate = ajv.compile(FLOW_RECORD_SCHEMA);

/** The schema's complaints about one line (JSON text), empty when it conforms. */
export function flowLineErrors(line: string): string[] {
  if (validate(JSON.parse(line))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(line)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

/** Every field path a line can carry: `node`, `source.ip`, `destination.labels`, … */
export function schemaPaths(): Set<string> {
  const paths = new Set(Object.keys(FLOW_RECORD_SCHEMA.properties));
  for (const end of ['source', 'destination'])
    for (const variant of FLOW_RECORD_SCHEMA.definitions.end.oneOf)
      for (const key of Object.keys(variant.properties)) paths.add(`${end}.${key}`);
  return paths;
}
