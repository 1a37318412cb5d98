// CIDR arithmetic for ipBlock: parsing with ipaddr.js, masking and set subtraction on bigints.

import ipaddr from 'ipaddr.js';
import type { IpFamily } from '../model/index.js';

export interface Cidr {
  readonly family: IpFamily;
  /** Network address with host bits cleared. */
  readonly base: bigint;
  readonly prefix: number;
}

export const familyBits = (family: IpFamily): number => (family === 4 ? 32 : 128);

export type ParsedCidr = { ok: true; cidr: Cidr; hadHostBits: boolean } | { ok: false; message: string };

function toBigInt(addr: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  return addr.toByteArray().reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
}

export interface ParsedIp {
  readonly family: IpFamily;
  readonly value: bigint;
}

// Every compile parses the same pod addresses again (dispatch trees, ipBlock scopes): parse each once.
const parsedIps = new Map<string, ParsedIp | undefined>();

/** Parses an address (`10.0.0.1`, `fd00::1`) into family and value; undefined when it is not one. */
export function parseIp(text: string): ParsedIp | undefined {
  if (parsedIps.has(text)) return parsedIps.get(text);
  let parsed: ParsedIp | undefined;
  if (ipaddr.isValid(text)) {
    const addr = ipaddr.parse(text);
    // An IPv4-mapped IPv6 address is still an IPv6 address on the wire.
    parsed = { family: addr.kind() === 'ipv4' ? 4 : 6, value: toBigInt(addr) };
  }
  if (parsedIps.size >= 1_000_000) parsedIps.clear();
  parsedIps.set(text, parsed);
  return parsed;
}

export function parseCidr(text: string): ParsedCidr {
  const slash = text.indexOf('/');
  if (slash < 0) return { ok: false, message: `"${text}" is not a CIDR (missing /prefix)` };
  const ip = parseIp(text.slice(0, slash));
  // ipaddr.isValid accepts shorthand like "10.1" (classful); the API does not.
  if (!ip || (ip.family === 4 && !/^\d+\.\d+\.\d+\.\d+$/.test(text.slice(0, slash)))) {
    return { ok: false, message: `"${text}" is not a CIDR (bad address)` };
  }
  const prefixText = text.slice(slash + 1);
  const prefix = Number(prefixText);
  const bits = familyBits(ip.family);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > bits) {
    return { ok: false, message: `"${text}" is not a CIDR (prefix must be 0-${bits})` };
  }
  const base = ip.value & maskOf(ip.family, prefix);
  return { ok: true, cidr: { family: ip.family, base, prefix }, hadHostBits: base !== ip.value };
}

function maskOf(family: IpFamily, prefix: number): bigint {
  const bits = familyBits(family);
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

export function contains(outer: Cidr, inner: Cidr): boolean {
  return outer.family === inner.family && outer.prefix <= inner.prefix && (inner.base & maskOf(outer.family, outer.prefix)) === outer.base;
}

export function containsIp(outer: Cidr, family: IpFamily, value: bigint): boolean {
  return outer.family === family && (value & maskOf(family, outer.prefix)) === outer.base;
}

/** `cidr` minus every `except`, as the smallest list of disjoint CIDRs (sorted by address). */
export function subtract(cidr: Cidr, excepts: readonly Cidr[]): Cidr[] {
  let pieces: Cidr[] = [cidr];
  for (const ex of excepts) {
    const next: Cidr[] = [];
    for (const piece of pieces) next.push(...subtractOne(piece, ex));
    pieces = next;
  }
  return pieces.sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : a.prefix - b.prefix));
}

function subtractOne(piece: Cidr, ex: Cidr): Cidr[] {
  if (contains(ex, piece)) return [];
  if (!contains(piece, ex)) return [piece];
  // Split `piece` in halves until the half holding `ex` is exactly `ex`; keep the other halves.
  const out: Cidr[] = [];
  const bits = familyBits(piece.family);
  let current = piece;
  while (current.prefix < ex.prefix) {
    const prefix = current.prefix + 1;
    const low: Cidr = { family: piece.family, base: current.base, prefix };
    const high: Cidr = { family: piece.family, base: current.base | (1n << BigInt(bits - prefix)), prefix };
    const [keep, descend] = contains(low, ex) ? [high, low] : [low, high];
    out.push(keep);
    current = descend;
  }
  return out;
}

export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.');
  }
  const bytes: number[] = [];
  for (let i = 15; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 255n));
  return ipaddr.fromByteArray(bytes).toString();
}

export const formatCidr = (c: Cidr): string => `${formatIp(c.family, c.base)}/${c.prefix}`;

/** Canonical text of an address (lower-case, compressed IPv6), as the kernel tools print it. */
export function canonicalIp(text: string): string | undefined {
  const ip = parseIp(text);
  return ip ? formatIp(ip.family, ip.value) : undefined;
}
