// CIDR syntax for configuration and flannel's subnet.env: strict parsing and canonical form.

import ipaddr from 'ipaddr.js';

export interface CanonicalCidr {
  readonly family: 4 | 6;
  /** Network address with host bits cleared, e.g. `10.244.1.0/24`, `fd00:10:244:1::/64`. */
  readonly cidr: string;
}

/**
 * Parses `addr/prefix` strictly and clears host bits (`10.244.1.1/24` → `10.244.1.0/24`, which is
 * how flannel writes FLANNEL_SUBNET). Undefined when `text` is not a CIDR.
 */
export function canonicalCidr(text: string): CanonicalCidr | undefined {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  if (!match) return undefined;
  const [, address = '', prefixText = ''] = match;
  const prefix = Number(prefixText);
  // ipaddr.isValid accepts classful shorthand ("10.1") and octal/hex parts; a CIDR in config does not.
  if (ipaddr.IPv4.isValidFourPartDecimal(address) && prefix <= 32) {
    return { family: 4, cidr: `${ipaddr.IPv4.networkAddressFromCIDR(`${address}/${prefix}`).toString()}/${prefix}` };
  }
  if (address.includes(':') && !address.includes('%') && ipaddr.IPv6.isValid(address) && prefix <= 128) {
    return { family: 6, cidr: `${ipaddr.IPv6.networkAddressFromCIDR(`${address}/${prefix}`).toString()}/${prefix}` };
  }
  return undefined;
}

export const isCidr = (text: string): boolean => canonicalCidr(text) !== undefined;
