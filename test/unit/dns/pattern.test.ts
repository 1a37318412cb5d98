// `domainNames` entries, by the examples of the field's documentation (network-policy-api v1alpha2,
// type DomainName) and its validation pattern.

import { domainMatches, parseDomainPattern } from '../../../src/dns/pattern.js';

const matches = (pattern: string, name: string | string[]): boolean => {
  const p = parseDomainPattern(pattern);
  if (!p.ok) throw new Error(p.reason);
  return domainMatches(p.value, typeof name === 'string' ? name.split('.') : name);
};

describe('domainNames matching (the API documentation’s examples)', () => {
  it('"kubernetes.io matches only kubernetes.io"', () => {
    expect(
      ['kubernetes.io', 'www.kubernetes.io', 'blog.kubernetes.io', 'my-kubernetes.io', 'wikipedia.org'].filter((n) =>
        matches('kubernetes.io', n),
      ),
    ).toEqual(['kubernetes.io']);
  });

  it('"blog.kubernetes.io matches only blog.kubernetes.io"', () => {
    expect(['blog.kubernetes.io', 'www.kubernetes.io', 'kubernetes.io'].filter((n) => matches('blog.kubernetes.io', n))).toEqual([
      'blog.kubernetes.io',
    ]);
  });

  it('"*.kubernetes.io matches subdomains of kubernetes.io": one or more entire labels', () => {
    const names = [
      'www.kubernetes.io',
      'blog.kubernetes.io',
      'latest.blog.kubernetes.io',
      'kubernetes.io',
      'wikipedia.org',
      'xkubernetes.io',
    ];
    expect(names.filter((n) => matches('*.kubernetes.io', n))).toEqual([
      'www.kubernetes.io',
      'blog.kubernetes.io',
      'latest.blog.kubernetes.io',
    ]);
  });

  it('case-insensitive, and a trailing dot names the same domain', () => {
    expect(matches('Kubernetes.IO', 'kubernetes.io')).toBe(true);
    expect(matches('kubernetes.io.', 'KUBERNETES.io')).toBe(true);
    expect(matches('*.kubernetes.io.', 'WWW.Kubernetes.io')).toBe(true);
  });

  it('label by label: a dot inside a queried label is not a boundary', () => {
    expect(matches('*.kubernetes.io', ['evil.kubernetes', 'io'])).toBe(false);
    expect(matches('kubernetes.io', ['kubernetes.io'])).toBe(false);
  });
});

describe('domainNames entries the API would not accept are refused', () => {
  it.each([
    '*',
    '*.io.',
    'io',
    'www.*.kubernetes.io',
    '**.kubernetes.io',
    '*kubernetes.io',
    '-a.kubernetes.io',
    'a..io',
    '',
    'kubernetes.io..',
  ])('%j', (text) => {
    const p = parseDomainPattern(text);
    expect(p.ok).toBe(false);
  });

  it('the fully qualified and the wildcard forms are accepted', () => {
    expect(['kubernetes.io', 'kubernetes.io.', '*.kubernetes.io', 'a_b.example.com'].map((t) => parseDomainPattern(t).ok)).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });
});
