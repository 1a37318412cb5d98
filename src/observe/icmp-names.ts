// ICMP and ICMPv6 message types by name, as a flow record shows them (`icmp echo-request`,
// `icmpv6 neighbour-solicitation`, `icmpv6 type 200`). The names are iptables' own (`iptables -p icmp -h`,
// `ip6tables -p ipv6-icmp -h`) and, for MLD, which iptables names only by number, nft's.

/** The ICMP header of a logged flow (NFLOG payload, dataplane/nflog-wire.ts). */
export interface FlowIcmp {
  readonly type: number;
  readonly code: number;
  /** Echo request and reply: the identifier. */
  readonly id?: number;
}

/** RFC 792 (and RFC 950, RFC 1256 for the router and address-mask messages). */
const ICMP4: Readonly<Record<number, string>> = {
  0: 'echo-reply',
  3: 'destination-unreachable',
  4: 'source-quench',
  5: 'redirect',
  8: 'echo-request',
  9: 'router-advertisement',
  10: 'router-solicitation',
  11: 'time-exceeded',
  12: 'parameter-problem',
  13: 'timestamp-request',
  14: 'timestamp-reply',
  17: 'address-mask-request',
  18: 'address-mask-reply',
};

/** RFC 4443 §2.1, RFC 4861 §4 (neighbour discovery), RFC 2710 and RFC 3810 (MLD). */
const ICMP6: Readonly<Record<number, string>> = {
  1: 'destination-unreachable',
  2: 'packet-too-big',
  3: 'time-exceeded',
  4: 'parameter-problem',
  128: 'echo-request',
  129: 'echo-reply',
  130: 'mld-listener-query',
  131: 'mld-listener-report',
  132: 'mld-listener-done',
  133: 'router-solicitation',
  134: 'router-advertisement',
  135: 'neighbour-solicitation',
  136: 'neighbour-advertisement',
  137: 'redirect',
  143: 'mld2-listener-report',
};

/** The type's name for `protocol` (`icmp` or `icmpv6`, as a flow record names them); undefined for another type. */
export const icmpTypeName = (protocol: string, type: number): string | undefined =>
  (protocol === 'icmpv6' ? ICMP6 : protocol === 'icmp' ? ICMP4 : {})[type];

/** `echo-request`, `destination-unreachable code 3`, `type 200`: the code only when it is not 0. */
export function icmpText(protocol: string, icmp: FlowIcmp): string {
  const type = icmpTypeName(protocol, icmp.type) ?? `type ${icmp.type}`;
  return icmp.code === 0 ? type : `${type} code ${icmp.code}`;
}
