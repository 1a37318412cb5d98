import { canonicalCidr } from '../../../src/config/cidr.js';
import { parseListenAddress } from '../../../src/config/listen-address.js';

describe('canonicalCidr', () => {
  it.each([
    { text: '10.244.1.0/24', expect: { family: 4, cidr: '10.244.1.0/24' } },
    { text: '10.244.1.1/24', expect: { family: 4, cidr: '10.244.1.0/24' } },
    { text: '0.0.0.0/0', expect: { family: 4, cidr: '0.0.0.0/0' } },
    { text: '10.0.0.7/32', expect: { family: 4, cidr: '10.0.0.7/32' } },
    { text: 'fd00:10:244:1::1/64', expect: { family: 6, cidr: 'fd00:10:244:1::/64' } },
    { text: '::/0', expect: { family: 6, cidr: '::/0' } },
    { text: 'FD00::1/128', expect: { family: 6, cidr: 'fd00::1/128' } },
  ])('accepts $text', ({ text, expect: expected }) => {
    expect(canonicalCidr(text)).toEqual(expected);
  });

  it.each([
    '10.0.0.0',
    '10.0.0.0/33',
    '10.1/16',
    '256.0.0.0/8',
    '010.0.0.0/8',
    'fd00::/129',
    'fe80::1%eth0/64',
    'fd00::g/64',
    '10.0.0.0/-1',
    '10.0.0.0/ 8',
    '',
  ])('rejects %p', (text) => {
    expect(canonicalCidr(text)).toBeUndefined();
  });
});

describe('parseListenAddress', () => {
  it.each([
    { text: '0.0.0.0:9476', expect: { host: '0.0.0.0', port: 9476 } },
    { text: '127.0.0.1:0', expect: { host: '127.0.0.1', port: 0 } },
    { text: '[::]:9476', expect: { host: '::', port: 9476 } },
    { text: '[fd00::1]:80', expect: { host: 'fd00::1', port: 80 } },
    { text: ':9476', expect: { host: '', port: 9476 } },
    { text: 'localhost:9476', expect: { host: 'localhost', port: 9476 } },
  ])('accepts $text', ({ text, expect: expected }) => {
    expect(parseListenAddress(text)).toEqual(expected);
  });

  it.each(['9476', '0.0.0.0:65536', '::1:9476', '[zz::]:1', '999.1.1.1:80', 'a b:80', '0.0.0.0:', 'host:port'])('rejects %p', (text) => {
    expect(parseListenAddress(text)).toBeUndefined();
  });
});
