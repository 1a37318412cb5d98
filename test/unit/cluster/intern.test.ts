import { LabelInterner } from '../../../src/cluster/intern.js';
import { convert } from '../../../src/cluster/convert.js';
import type { Pod } from '../../../src/model/index.js';

describe('LabelInterner', () => {
  it('returns one object per distinct label set', () => {
    const interner = new LabelInterner();
    const a = interner.intern({ app: 'web', 'pod-template-hash': '7d9f' });
    expect(interner.intern({ app: 'web', 'pod-template-hash': '7d9f' })).toBe(a);
    expect(interner.intern({ app: 'web', 'pod-template-hash': '8e0a' })).not.toBe(a);
    expect(interner.intern({})).toEqual({});
    expect(interner.size).toBe(3);
  });

  it('shares the set met last only when it is the same text: keys, their order and values', () => {
    const interner = new LabelInterner();
    const a = interner.intern({ app: 'web', tier: 'front' });
    const reordered = interner.intern({ tier: 'front', app: 'web' });
    expect(reordered).not.toBe(a);
    expect(Object.keys(reordered)).toEqual(['tier', 'app']);
    const otherValue = interner.intern({ tier: 'front', app: 'api' });
    expect(otherValue).not.toBe(reordered);
    expect(otherValue).toEqual({ tier: 'front', app: 'api' });
    const fewer = interner.intern({ tier: 'front' });
    expect(fewer).toEqual({ tier: 'front' });
    const more = interner.intern({ tier: 'front', app: 'api', x: '' });
    expect(more).toEqual({ tier: 'front', app: 'api', x: '' });
    expect(interner.intern({ app: 'web', tier: 'front' })).toBe(a);
    expect(interner.intern({ app: 'web', tier: 'front' })).toBe(a);
    expect(interner.size).toBe(5);
  });

  it('pods converted with equal labels share them, and keep their values', () => {
    const pod = (name: string, labels: Record<string, string>) =>
      (
        convert('Pod', {
          metadata: { name, namespace: 'prod', labels },
          spec: { nodeName: 'n1' },
          status: { phase: 'Running', podIP: '10.0.0.1' },
        }) as { value: Pod }
      ).value;
    const a = pod('a', { app: 'web' });
    const b = pod('b', { app: 'web' });
    const c = pod('c', { app: 'db' });
    expect(a.labels).toBe(b.labels);
    expect(c.labels).toEqual({ app: 'db' });
    expect(a.labels).toEqual({ app: 'web' });
  });
});
