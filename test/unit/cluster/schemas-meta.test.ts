// The object and configuration schemas are compiled without meta-schema validation (it costs every
// command start-up time); this checks them against the JSON Schema meta-schema instead.

import { Ajv } from 'ajv';
import { namespaceSchema, networkPolicySchema, nodeSchema, podSchema } from '../../../src/cluster/schemas.js';
import { CONFIG_LAYER_SCHEMA } from '../../../src/config/schema.js';

describe('schemas are valid JSON Schema', () => {
  it.each([
    ['Namespace', namespaceSchema],
    ['Pod', podSchema],
    ['NetworkPolicy', networkPolicySchema],
    ['Node', nodeSchema],
    ['config layer', CONFIG_LAYER_SCHEMA],
  ])('%s', (_name, schema) => {
    const ajv = new Ajv({ strict: true, allowUnionTypes: true });
    expect(ajv.validateSchema(schema as object)).toBe(true);
    expect(ajv.errors ?? null).toBeNull();
  });
});
