// Addresses and interface names as iptables compares them: CIDR containment over bigints (v4 and v6)
// and interface names with iptables' trailing `+` wildcard.

import ipaddr from 'ipaddr.js';

export type Family = 4 | 6;

export interface Addr {
  readonly family: Family;
  readonly value: bigint;
}

const bitsOf = (family: Family): number => (family === 4 ? 32 : 128);

/** `10.0.0.1`, `fd00::1`; undefined when the text is not an address. */
export function parseAddr(text: string): Addr | undefined {
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(text);
  if (!v4 && !(text.includes(':') && ipaddr.IPv6.isValid(text))) return undefined;
  const addr = ipaddr.parse(text);
  const value = addr.toByteArray().reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
  return { family: addr.kind() === 'ipv4' ? 4 : 6, value };
}

export interface Net {
  readonly family: Family;
  readonly base: bigint;
  readonly prefix: number;
}

/** `10.0.0.0/8`, or a bare address (a host route, as iptables-save and hash:net print /32 and /128). */
export function parseNet(text: string): Net | undefined {
  const [address = '', prefixText, ...rest] = text.split('/');
  if (rest.length > 0) return undefined;
  const addr = parseAddr(address);
  if (!addr) return undefined;
  const bits = bitsOf(addr.family);
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits || (prefixText !== undefined && !/^\d+$/.test(prefixText))) return undefined;
  return { family: addr.family, base: addr.value & maskOf(addr.family, prefix), prefix };
}

function maskOf(family: Family, prefix: number): bigint {
  const bits = bitsOf(family);
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

export const netContains = (net: Net, addr: Addr): boolean =>
  net.family === addr.family && (addr.value & maskOf(net.family, net.prefix)) === net.base;

/** True when `addr` lies in any of the CIDRs (unparsable ones never match). */
export const inAnyNet = (addr: Addr, cidrs: readonly string[]): boolean =>
  cidrs.some((c) => {
    const net = parseNet(c);
    return net !== undefined && netContains(net, addr);
  });

/** iptables `-i`/`-o`/`--physdev-*`: exact name, or a prefix when the pattern ends in `+`. */
export function ifaceMatches(pattern: string, name: string | undefined): boolean {
  if (name === undefined) return false;
  return pattern.endsWith('+') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}
