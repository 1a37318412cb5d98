// What an answer grants the pod that asked: real query/answer pairs (captured.ts), then answers that must
// grant nothing (another transaction, another question, a chain that starts elsewhere) built from them.

import { grantedAddresses, sentQuery, type SentQuery } from '../../../src/dns/answer.js';
import { parseDnsMessage, TYPE_A, TYPE_AAAA, type DnsMessage, type DnsRecord } from '../../../src/dns/wire.js';
import { captured } from './captured.js';

const parsed = (b: Buffer): DnsMessage => {
  const p = parseDnsMessage(b);
  if (!p.ok) throw new Error(p.reason);
  return p.value;
};
const pair = (name: string): { query: SentQuery; answer: DnsMessage } => {
  const c = captured(name);
  const strip = (b: Buffer): Buffer => (c.transport === 'tcp' ? b.subarray(2) : b);
  const q = sentQuery(parsed(strip(c.query)));
  if (!q.ok) throw new Error(q.reason);
  return { query: q.value, answer: parsed(strip(c.answer)) };
};
const grant = (query: SentQuery, answer: DnsMessage): unknown => {
  const g = grantedAddresses(query, answer);
  return g.ok ? { name: g.value.name.join('.'), addresses: g.value.addresses } : g.reason;
};
const cname = (owner: string, target: string, ttl = 300): DnsRecord => ({
  name: owner.split('.'),
  type: 5,
  class: 1,
  ttl,
  data: { kind: 'CNAME', target: target.split('.') },
});
const a = (owner: string, address: string, ttl = 300): DnsRecord => ({
  name: owner.split('.'),
  type: TYPE_A,
  class: 1,
  ttl,
  data: { kind: 'A', address },
});

describe('grants from captured answers', () => {
  it('A: the queried name and its address with the TTL', () => {
    const { query, answer } = pair('a');
    expect(grant(query, answer)).toEqual({ name: 'good.example.test', addresses: [{ family: 4, address: '198.51.100.10', ttl: 300 }] });
  });

  it('AAAA', () => {
    const { query, answer } = pair('aaaa');
    expect(query.type).toBe(TYPE_AAAA);
    expect(grant(query, answer)).toEqual({ name: 'good.example.test', addresses: [{ family: 6, address: '2001:db8::10', ttl: 300 }] });
  });

  it('a CNAME chain: the address at its end is granted for the queried name', () => {
    const { query, answer } = pair('cname-chain');
    expect(grant(query, answer)).toEqual({ name: 'alias.example.test', addresses: [{ family: 4, address: '198.51.100.20', ttl: 300 }] });
  });

  it('mixed case: matched case-insensitively, granted under the lower-cased name', () => {
    const { query, answer } = pair('mixed-case');
    expect(grant(query, answer)).toEqual({ name: 'good.example.test', addresses: [{ family: 4, address: '198.51.100.10', ttl: 300 }] });
  });

  it('TCP: the same once the length prefix is framed off', () => {
    const { query, answer } = pair('tcp-a');
    expect(grant(query, answer)).toEqual({ name: 'good.example.test', addresses: [{ family: 4, address: '198.51.100.10', ttl: 300 }] });
  });

  it('every address of a name', () => {
    const { query, answer } = pair('multi-a');
    expect(grant(query, answer)).toMatchObject({ addresses: [{ address: '198.51.100.31' }, { address: '198.51.100.32' }] });
  });

  it('NXDOMAIN grants nothing', () => {
    const { query, answer } = pair('nxdomain');
    expect(grant(query, answer)).toMatch(/response code 3/);
  });
});

describe('answers that grant nothing', () => {
  const { query, answer } = pair('a');
  const other = pair('cname-chain');

  it('another transaction id (a forged or stale answer)', () => {
    expect(grant({ ...query, id: (query.id + 1) & 0xffff }, answer)).toMatch(/transaction id/);
  });

  it('another question (an answer for a name the pod did not ask)', () => {
    expect(grant({ ...other.query, id: query.id }, answer)).toMatch(/another question/);
  });

  it('the same name asked for AAAA, answered for A', () => {
    expect(grant({ ...query, type: TYPE_AAAA }, answer)).toMatch(/another question/);
  });

  it('a query, not a response', () => {
    expect(grant(query, { ...answer, header: { ...answer.header, response: false } })).toMatch(/not a response/);
  });

  it('records for other names: only the chain from the queried name counts', () => {
    const extra = {
      ...answer,
      answers: [...answer.answers, a('bank.example.test', '203.0.113.66'), cname('unrelated.test', 'good.example.test')],
    };
    expect(grant(query, extra)).toEqual({ name: 'good.example.test', addresses: [{ family: 4, address: '198.51.100.10', ttl: 300 }] });
  });

  it('a chain that does not start at the queried name grants only the queried name’s own records', () => {
    const chainElsewhere = { ...answer, answers: [cname('x.test', 'y.test'), a('y.test', '203.0.113.9')] };
    expect(grant(query, chainElsewhere)).toEqual({ name: 'good.example.test', addresses: [] });
  });

  it('a looping chain and an ambiguous chain are refused', () => {
    const loop = { ...answer, answers: [cname('good.example.test', 'b.test'), cname('b.test', 'GOOD.example.test')] };
    expect(grant(query, loop)).toMatch(/loops/);
    const forked = { ...answer, answers: [cname('good.example.test', 'b.test'), cname('good.example.test', 'c.test')] };
    expect(grant(query, forked)).toMatch(/several CNAMEs/);
  });

  it('a chain longer than 16 is refused', () => {
    const links = Array.from({ length: 17 }, (_, i) => cname(i === 0 ? 'good.example.test' : `n${i}.test`, `n${i + 1}.test`));
    expect(grant(query, { ...answer, answers: [...links, a('n17.test', '203.0.113.1')] })).toMatch(/longer than 16/);
    expect(grant(query, { ...answer, answers: [...links.slice(0, 16), a('n16.test', '203.0.113.1')] })).toMatchObject({
      addresses: [{ address: '203.0.113.1' }],
    });
  });

  it('an address reached through a CNAME lives no longer than the CNAME', () => {
    const chained = { ...answer, answers: [cname('good.example.test', 'b.test', 30), a('b.test', '203.0.113.2', 600)] };
    expect(grant(query, chained)).toMatchObject({ addresses: [{ address: '203.0.113.2', ttl: 30 }] });
  });
});

describe('which queries can grant', () => {
  it('only a standard query with one IN question for A or AAAA', () => {
    const q = parsed(captured('a').query);
    expect(sentQuery({ ...q, header: { ...q.header, response: true } })).toMatchObject({ ok: false, reason: /a response/ });
    expect(sentQuery({ ...q, questions: [] })).toMatchObject({ ok: false, reason: /0 questions/ });
    expect(sentQuery({ ...q, questions: [{ ...q.questions[0]!, type: 16 }] })).toMatchObject({
      ok: false,
      reason: /type 16 asks for no address/,
    });
    expect(sentQuery({ ...q, questions: [{ ...q.questions[0]!, class: 3 }] })).toMatchObject({ ok: false, reason: /class 3/ });
  });
});
