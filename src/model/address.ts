// Addresses and CIDRs of both families, the one place netfence reads them: the compiler (pod IPs, ipBlock),
// the configuration (pod CIDRs, flannel's subnet), the tracer (iptables and ipset members) and the
// anti-spoofing table. ipaddr.js parses IPv6; arithmetic is on bigints.

import ipaddr from 'ipaddr.js';
import type { IpFamily } from './cluster.js';

export interface ParsedIp {
  readonly family: IpFamily;
  readonly value: bigint;
}

export interface Cidr {
  readonly family: IpFamily;
  /** Network address with host bits cleared. */
  readonly base: bigint;
  readonly prefix: number;
}

export const familyBits = (family: IpFamily): number => (family === 4 ? 32 : 128);

function computeMask(family: IpFamily, prefix: number): bigint {
  const bits = familyBits(family);
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

/** Every prefix's mask, made once: a map's traces test addresses against CIDRs hundreds of thousands of times. */
const MASKS: Readonly<Record<IpFamily, readonly bigint[]>> = {
  4: Array.from({ length: 33 }, (_, prefix) => computeMask(4, prefix)),
  6: Array.from({ length: 129 }, (_, prefix) => computeMask(6, prefix)),
};

const maskOf = (family: IpFamily, prefix: number): bigint => MASKS[family][prefix] ?? computeMask(family, prefix);

export type ParsedCidr = { ok: true; cidr: Cidr; hadHostBits: boolean } | { ok: false; message: string };

function toBigInt(addr: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  return addr.toByteArray().reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
}

// Every compile parses the same pod addresses again (dispatch trees, ipBlock scopes): parse each once.
const parsedIps = new Map<string, ParsedIp | null>();

/** Whether `text` has the shape the API server accepts for an IPv6 address: no zone (`%eth0`). */
const strictV6Form = (text: string): boolean => !text.includes('%') && ipaddr.IPv6.isValid(text);

/**
 * The value of a dotted quad as the API server's strict validation reads it (KEP-4858): four decimal
 * octets of at most 255, no leading zeros. "They allow IPv4 addresses to have leading "0"s ... most
 * libc-based code treats the octets as _octal_ ... (This was CVE-2021-29923.) The updated validation will
 * reject IPv4 IPs with leading "0"s". ipaddr.js would read `010.10.0.0` as octal 8.10.0.0. Read character
 * by character: every pod address and every ipBlock except comes through here once.
 */
export function strictV4Value(text: string): number | undefined {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      // A second digit after a leading 0 is the ambiguous (octal) form the API server rejects.
      if ((digits > 0 && octet === 0) || ++digits > 3) return undefined;
      octet = octet * 10 + (c - 48);
    } else if (c === 46 && digits > 0 && octet <= 255 && dots < 3) {
      value = value * 256 + octet;
      dots++;
      octet = 0;
      digits = 0;
    } else {
      return undefined;
    }
  }
  return dots === 3 && digits > 0 && octet <= 255 ? value * 256 + octet : undefined;
}

/** Parses an address (`10.0.0.1`, `fd00::1`) into family and value; undefined when it is not one. */
export function parseIp(text: string): ParsedIp | undefined {
  // One lookup: `null` stands for "parsed before, not an address".
  const known = parsedIps.get(text);
  if (known !== undefined) return known ?? undefined;
  let parsed: ParsedIp | undefined;
  const v4 = strictV4Value(text);
  if (v4 !== undefined) {
    parsed = { family: 4, value: BigInt(v4) };
  } else if (text.includes(':') && strictV6Form(text)) {
    // Text with a colon parses as IPv6, IPv4-mapped ones too: that is what they are on the wire.
    parsed = { family: 6, value: toBigInt(ipaddr.parse(text)) };
  }
  if (parsedIps.size >= 1_000_000) parsedIps.clear();
  parsedIps.set(text, parsed ?? null);
  return parsed;
}

/**
 * Canonical text of an address as the API server's strict validation accepts it: a dotted quad is already
 * canonical once it parses (no leading zeros, four octets); IPv6 is printed in RFC 5952 form (`FD00:0::0001`
 * → `fd00::1`). Undefined for anything else, a non-string included (objects from the API are untyped).
 */
export function canonicalIp(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const ip = parseIp(text);
  if (!ip) return undefined;
  return ip.family === 4 ? text : formatIp(6, ip.value);
}

/** The family of an address a pod can own; undefined for text that is not one, or for 0.0.0.0 / ::. */
export function podAddressFamily(text: string): IpFamily | undefined {
  // A dotted quad is read from its characters (as parseIp reads it first): cheaper than finding it again among
  // every address parsed, which the compiler would do for each local pod and policy target on every compile.
  const v4 = strictV4Value(text);
  if (v4 !== undefined) return v4 !== 0 ? 4 : undefined;
  const ip = parseIp(text);
  return ip && ip.value !== 0n ? ip.family : undefined;
}

/**
 * Why an address cannot be a pod's, or undefined when it can: it must parse as the API server parses it,
 * and it must not be the unspecified address (0.0.0.0 or ::), which no pod can own and which `ipset`
 * refuses to store ("Null-valued element"), failing the whole restore.
 */
export function podAddressProblem(text: string): string | undefined {
  const ip = parseIp(text);
  if (!ip) return `"${text}" is not an IP address`;
  if (ip.value === 0n) return `"${text}" is the unspecified address, which no pod can own`;
  return undefined;
}

/** `10.0.0.0/8` as the API server reads an ipBlock: a strict address and a prefix without leading zeros. */
export function parseCidr(text: string): ParsedCidr {
  const slash = text.indexOf('/');
  if (slash < 0) return { ok: false, message: `"${text}" is not a CIDR (missing /prefix)` };
  const ip = parseIp(text.slice(0, slash));
  if (!ip)
    return {
      ok: false,
      message: `"${text}" is not a CIDR (bad address${/(^|[.])0\d/.test(text.slice(0, slash)) ? ': leading zeros are ambiguous (octal or decimal) and the API server rejects them' : ''})`,
    };
  const prefixText = text.slice(slash + 1);
  const prefix = Number(prefixText);
  const bits = familyBits(ip.family);
  if (!/^(0|[1-9]\d{0,2})$/.test(prefixText) || prefix > bits) {
    return { ok: false, message: `"${text}" is not a CIDR (prefix must be 0-${bits})` };
  }
  const base = ip.value & maskOf(ip.family, prefix);
  return { ok: true, cidr: { family: ip.family, base, prefix }, hadHostBits: base !== ip.value };
}

/**
 * `10.0.0.0/8`, or a bare address as a host route: iptables-save and `hash:net` sets print /32 and /128
 * members without their prefix. Undefined when the text is neither.
 */
export function parseCidrOrHost(text: string): Cidr | undefined {
  // One lookup, as parseIp: the tracer reads a rule's CIDR text again for every packet it meets.
  const known = parsedNets.get(text);
  if (known !== undefined) return known ?? undefined;
  let cidr: Cidr | undefined;
  if (text.includes('/')) {
    const parsed = parseCidr(text);
    cidr = parsed.ok ? parsed.cidr : undefined;
  } else {
    const ip = parseIp(text);
    cidr = ip && { family: ip.family, base: ip.value, prefix: familyBits(ip.family) };
  }
  if (parsedNets.size >= 100_000) parsedNets.clear();
  parsedNets.set(text, cidr ?? null);
  return cidr;
}

const parsedNets = new Map<string, Cidr | null>();

export function contains(outer: Cidr, inner: Cidr): boolean {
  return outer.family === inner.family && outer.prefix <= inner.prefix && (inner.base & maskOf(outer.family, outer.prefix)) === outer.base;
}

export function containsIp(outer: Cidr, family: IpFamily, value: bigint): boolean {
  return outer.family === family && (value & maskOf(family, outer.prefix)) === outer.base;
}

/** True when `ip` lies in any of the CIDRs (text that is not one never matches). */
export const inAnyCidr = (ip: ParsedIp, cidrs: readonly string[]): boolean =>
  cidrs.some((text) => {
    const cidr = parseCidrOrHost(text);
    return cidr !== undefined && containsIp(cidr, ip.family, ip.value);
  });

export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 4) {
    // One conversion to a number (exact below 2^53), then plain bit operations: sets can hold tens of thousands.
    const n = Number(value);
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  const bytes: number[] = [];
  for (let i = 15; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 255n));
  return ipaddr.fromByteArray(bytes).toString();
}

/**
 * An address in network byte order (4 or 16 bytes), as netlink attributes carry it. Throws on text that is
 * not an address: callers pass addresses the model already holds (pod addresses, flow tuples).
 */
export function ipToBytes(text: string): Buffer {
  const ip = parseIp(text);
  if (!ip) throw new Error(`"${text}" is not an IP address`);
  const out = Buffer.alloc(familyBits(ip.family) / 8);
  let value = ip.value;
  for (let i = out.length - 1; i >= 0; i--, value >>= 8n) out[i] = Number(value & 255n);
  return out;
}

/**
 * The text of an address carried in network byte order (4 or 16 bytes): a conntrack dump, a flow log or a DNS
 * answer. Formatted by hand, not through ipaddr's objects (a dump holds every flow of the node); IPv6 in
 * RFC 5952 form, as ipaddr prints it.
 */
export const ipFromBytes = (b: Uint8Array): string => (b.length === 4 ? `${b[0]}.${b[1]}.${b[2]}.${b[3]}` : ipv6Text(b));

/** RFC 5952 text: lower case, the longest run of two or more zero groups (the first of equals) as `::`. */
function ipv6Text(b: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => (b[i * 2]! << 8) | b[i * 2 + 1]!);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

export const formatCidr = (c: Cidr): string => `${formatIp(c.family, c.base)}/${c.prefix}`;

export interface CanonicalCidr {
  readonly family: IpFamily;
  /** Network address with host bits cleared, e.g. `10.244.1.0/24`, `fd00:10:244:1::/64`. */
  readonly cidr: string;
}

/**
 * A CIDR from configuration, flannel's subnet.env or a Node's spec.podCIDRs, with host bits cleared
 * (`10.244.1.1/24` → `10.244.1.0/24`, which is how flannel writes FLANNEL_SUBNET). Surrounding space is
 * ignored. Read by parseCidr, so as strictly as an ipBlock: a prefix written `/024` is refused here too.
 * Undefined when `text` is not a CIDR.
 */
export function canonicalCidr(text: string): CanonicalCidr | undefined {
  const parsed = parseCidr(text.trim());
  return parsed.ok ? { family: parsed.cidr.family, cidr: formatCidr(parsed.cidr) } : undefined;
}

export const isCidr = (text: string): boolean => canonicalCidr(text) !== undefined;
