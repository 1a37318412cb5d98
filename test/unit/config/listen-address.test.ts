import { parseListenAddress } from '../../../src/config/listen-address.js';

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
