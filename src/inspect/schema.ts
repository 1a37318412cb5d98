// JSON Schema of `netfence inspect --json` (draft-07, ajv strict mode): the contract scripts rely on.
// Kept beside model.ts; a unit test validates real reports against it, so the two cannot drift apart.

const str = { type: 'string' } as const;
const int = { type: 'integer', minimum: 0 } as const;
const strings = { type: 'array', items: str } as const;

const ruleRef = {
  type: 'object',
  additionalProperties: false,
  required: ['chain', 'ruleIndex', 'text'],
  properties: { chain: str, ruleIndex: { type: 'integer', minimum: 1 }, text: str },
} as const;

const setView = {
  type: 'object',
  additionalProperties: false,
  required: ['set', 'direction', 'members', 'sample'],
  properties: { set: str, direction: { enum: ['src', 'dst', 'src,src', 'dst,dst'] }, type: str, members: int, sample: strings },
} as const;

const peer = {
  oneOf: [
    { type: 'object', additionalProperties: false, required: ['kind'], properties: { kind: { const: 'any' } } },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'set', 'direction', 'members', 'sample'],
      properties: { kind: { const: 'set' }, ...setView.properties },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'cidr', 'negate'],
      properties: { kind: { const: 'cidr' }, cidr: str, negate: { type: 'boolean' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'excepts'],
      properties: { kind: { const: 'block' }, cidrs: setView, excepts: setView },
    },
  ],
} as const;

const direction = { enum: ['ingress', 'egress'] } as const;

const policyRule = {
  type: 'object',
  additionalProperties: false,
  required: ['rule', 'ruleIndex', 'protocol', 'ports', 'peer'],
  properties: {
    rule: str,
    ruleIndex: { type: 'integer', minimum: 1 },
    protocol: { enum: ['tcp', 'udp', 'sctp', 'any'] },
    ports: str,
    peer,
    namedPorts: setView,
    packets: int,
    learned: {
      type: 'object',
      additionalProperties: false,
      required: ['pod', 'names', 'addresses'],
      properties: {
        pod: str,
        names: strings,
        addresses: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['address'],
            properties: { address: str, name: str, learnedAt: int, remainingSeconds: int },
          },
        },
      },
    },
  },
} as const;

const policy = {
  type: 'object',
  additionalProperties: false,
  required: ['policy', 'direction', 'chain', 'rules', 'usedBy'],
  properties: {
    policy: str,
    direction,
    chain: str,
    rules: { type: 'array', items: policyRule },
    note: str,
    usedBy: strings,
    allowedPackets: int,
    deniedPackets: int,
  },
} as const;

const workload = {
  type: 'object',
  additionalProperties: false,
  required: ['chain', 'isolated', 'policies', 'policyChains'],
  properties: { chain: str, isolated: { type: 'boolean' }, policies: strings, policyChains: strings, droppedPackets: int },
} as const;

const pod = {
  type: 'object',
  additionalProperties: false,
  required: ['ip', 'dispatch'],
  properties: {
    pod: str,
    ip: str,
    dispatch: {
      type: 'object',
      additionalProperties: false,
      required: ['egress', 'ingress'],
      properties: { egress: { type: 'array', items: ruleRef }, ingress: { type: 'array', items: ruleRef } },
    },
    egress: workload,
    ingress: workload,
    toNode: workload,
  },
} as const;

const problem = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'message'],
  properties: {
    kind: { enum: ['owned-unexpected', 'foreign-above-hook', 'missing-hook', 'unreferenced-chain', 'missing-set', 'missing-chain'] },
    message: str,
    chain: str,
    ruleIndex: { type: 'integer', minimum: 1 },
    text: str,
  },
} as const;

const strictMode = {
  type: 'object',
  additionalProperties: false,
  required: ['on'],
  properties: {
    on: { type: 'boolean' },
    bit: int,
    position: { type: 'integer', minimum: 1 },
    revokedFlows: int,
    revokedByPod: {
      type: 'array',
      items: { type: 'object', additionalProperties: false, required: ['pod', 'flows'], properties: { pod: str, flows: int } },
    },
    revokedUnreadable: str,
  },
} as const;

/** Absent for a saved dump (it holds no nft tables). */
const antiSpoofing = {
  type: 'object',
  additionalProperties: false,
  required: ['programmed', 'ports', 'unknownPortDrops'],
  properties: {
    programmed: { type: 'boolean' },
    ports: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['port', 'addresses', 'drops'],
        properties: { port: str, addresses: strings, drops: int },
      },
    },
    unknownPortDrops: int,
  },
} as const;

export const INSPECT_REPORT_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'netfence inspect --json',
  type: 'object',
  additionalProperties: false,
  required: ['chainPrefix', 'forwardPolicy', 'failClosedCidrs', 'pods', 'policies', 'problems'],
  properties: {
    /** Which family's ruleset this is (a dual-stack node has one per family; `--family` picks). */
    family: { enum: [4, 6] },
    chainPrefix: str,
    forwardPolicy: str,
    hookPosition: { type: 'integer', minimum: 1 },
    failClosedCidrs: strings,
    pods: { type: 'array', items: pod },
    policies: { type: 'array', items: policy },
    problems: { type: 'array', items: problem },
    strictMode,
    antiSpoofing,
  },
} as const;
