// IPv4 address arithmetic for the sandbox's address plan (pod CIDRs, underlay). The sandbox is IPv4-only.

export interface Ipv4Cidr {
  /** Network address with host bits cleared, as an unsigned 32-bit number. */
  readonly base: number;
  readonly prefix: number;
}

export function parseIpv4(text: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const octets = m.slice(1).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  return octets.reduce((acc, o) => acc * 256 + o, 0);
}

export function formatIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

/** Parses `a.b.c.d/p`; host bits must be clear, since a pod CIDR with host bits set is a typo. */
export function parseIpv4Cidr(text: string): Ipv4Cidr {
  const [addr, prefixText, ...rest] = text.split('/');
  const base = addr === undefined ? undefined : parseIpv4(addr);
  const prefix = Number(prefixText);
  if (base === undefined || rest.length > 0 || !/^\d{1,2}$/.test(prefixText ?? '') || prefix > 32) {
    throw new Error(`"${text}" is not an IPv4 CIDR`);
  }
  if (base % 2 ** (32 - prefix) !== 0) throw new Error(`"${text}" has host bits set`);
  return { base, prefix };
}

export const cidrSize = (cidr: Ipv4Cidr): number => 2 ** (32 - cidr.prefix);

export function cidrContains(cidr: Ipv4Cidr, ip: number): boolean {
  return ip >= cidr.base && ip < cidr.base + cidrSize(cidr);
}

export function cidrsOverlap(a: Ipv4Cidr, b: Ipv4Cidr): boolean {
  return cidrContains(a, b.base) || cidrContains(b, a.base);
}

export const formatCidr = (cidr: Ipv4Cidr): string => `${formatIpv4(cidr.base)}/${cidr.prefix}`;

/** The first usable address, which flannel gives the bridge (10.244.1.0/24 → 10.244.1.1). */
export function gatewayOf(cidr: Ipv4Cidr): number {
  if (cidr.prefix > 30) throw new Error(`${formatCidr(cidr)} is too small for a bridge and pods`);
  return cidr.base + 1;
}

/**
 * The lowest address of the CIDR that is neither network, gateway, broadcast nor taken,
 * as host-local IPAM hands them out on a fresh node; undefined when the range is full.
 */
export function nextFreeIp(cidr: Ipv4Cidr, taken: ReadonlySet<number>): number | undefined {
  const last = cidr.base + cidrSize(cidr) - 2; // broadcast excluded
  for (let ip = gatewayOf(cidr) + 1; ip <= last; ip++) if (!taken.has(ip)) return ip;
  return undefined;
}

/** True when `ip` may be given to a pod of `cidr` (not network, gateway or broadcast). */
export function isAssignable(cidr: Ipv4Cidr, ip: number): boolean {
  return cidrContains(cidr, ip) && ip > gatewayOf(cidr) && ip < cidr.base + cidrSize(cidr) - 1;
}
