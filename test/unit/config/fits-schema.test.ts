// fits-schema.ts passes config layers without ajv. It must never pass a layer the schema refuses (the
// error would go unreported), so every key is tried with values of every kind against ajv itself.

import { Ajv } from 'ajv';
import { isCidr } from '../../../src/model/address.js';
import { layerFits, type Formats } from '../../../src/config/fits-schema.js';
import { parseListenAddress } from '../../../src/config/listen-address.js';
import { CONFIG_LAYER_SCHEMA } from '../../../src/config/schema.js';

const FORMATS: Formats = { cidr: isCidr, 'listen-address': (text) => parseListenAddress(text) !== undefined };
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
const schemaValid = ajv.compile(CONFIG_LAYER_SCHEMA);

const VALUES: unknown[] = [
  undefined,
  null,
  true,
  false,
  0,
  1,
  2,
  -1,
  1.5,
  30,
  1000,
  60000,
  60001,
  86400,
  86401,
  65535,
  65536,
  10000,
  10001,
  '',
  'x',
  'node-1',
  'Node_1',
  'a.b-c',
  '-a',
  'a'.repeat(254),
  'cni0',
  'br/0',
  'has space',
  'nf',
  'nf-x',
  'abcdefg',
  'nf_',
  'ab12',
  'abcde',
  '0xffff0000',
  'fail-closed',
  'fail-open',
  'auto',
  'nft',
  'legacy',
  'info',
  'debug',
  'json',
  'text',
  '127.0.0.1:9100',
  ':9100',
  'localhost',
  '10.0.0.0/24',
  '10.0.0.1/33',
  '\u{1F600}',
  'é',
  [],
  ['10.0.0.0/24'],
  ['10.0.0.0/24', '10.0.0.0/24'],
  ['10.0.0.0/24', 'fd00::/64'],
  ['x'],
  [1],
  {},
  { a: 1 },
];

const KEYS = [...Object.keys(CONFIG_LAYER_SCHEMA.properties), 'unknownKey', 'constructor', '__proto__'];

describe('layerFits: passes only what CONFIG_LAYER_SCHEMA passes', () => {
  it('no key with any value passes layerFits but fails the schema', () => {
    const wrong: string[] = [];
    let fast = 0;
    let refused = 0;
    for (const key of KEYS) {
      for (const value of VALUES) {
        const layer = JSON.parse(`{${JSON.stringify(key)}: 0}`) as Record<string, unknown>;
        layer[key] = value;
        const valid = schemaValid(layer);
        if (!valid) refused++;
        if (layerFits(CONFIG_LAYER_SCHEMA, layer, FORMATS)) {
          fast++;
          if (!valid) wrong.push(`${key} = ${JSON.stringify(value)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(refused).toBeGreaterThan(500);
    expect(fast).toBeGreaterThan(100);
  });

  it('the layers commands usually get pass without ajv', () => {
    for (const layer of [
      {},
      { nodeName: 'node-1', logLevel: 'error' },
      { nodeName: 'node-1', podCidrs: ['10.244.0.0/24', 'fd00::/64'], backend: 'nft', ipv6: true, markMask: '0xffff0000' },
      { listenAddress: '127.0.0.1:9100', resyncIntervalSeconds: 30, chainPrefix: 'nf', ipsetPrefix: 'nf' },
    ]) {
      expect(schemaValid(layer)).toBe(true);
      expect(layerFits(CONFIG_LAYER_SCHEMA, layer, FORMATS)).toBe(true);
    }
  });

  it('a schema keyword it does not know sends the layer to ajv', () => {
    const schema = { type: 'object', additionalProperties: false, properties: { a: { type: 'string', const: 'x' } } };
    expect(layerFits(schema, { a: 'y' }, FORMATS)).toBe(false);
  });
});
