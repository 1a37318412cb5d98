// Protocols and ports with real packets: the upstream e2e UDP and SCTP contexts ("Netpol [LinuxOnly]
// … using UDP", "Netpol [Feature:SCTPConnectivity] … using SCTP"), then port ranges (endPort), named
// ports resolved per destination pod, several ports in one rule, and protocol-only ports.
// SCTP is probed with an emulated INIT/INIT-ACK handshake (the kernel here has no SCTP sockets, but
// netfilter tracks SCTP), so an SCTP rule is proven with SCTP packets, not only by TCP staying shut.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand -- test/kernel/conformance

import { policyCase, step, sctp80, sctp81, tcp80, tcp81, udp80, udp81, type ConformanceCase } from '../../helpers/conformance/cases.js';
import { netpol, type PeerDoc, type PortDoc } from '../../helpers/conformance/manifests.js';
import { ALL, anyPortOf, namespaces, podsInNamespaces, port, portRange, sel } from '../../helpers/conformance/policies.js';
import { allReachable, reach } from '../../helpers/conformance/reachability.js';
import { describeConformance } from '../../helpers/conformance/suite.js';

const NS_NAME = 'kubernetes.io/metadata.name';
const podA = sel({ pod: 'a' });
const xaIngress = (name: string, from: readonly PeerDoc[] | undefined, ports?: readonly PortDoc[]) =>
  netpol('x', name, { podSelector: podA, ingress: [{ ...(from ? { from } : {}), ...(ports ? { ports } : {}) }] });
const denyIngress = (ns: string) => netpol(ns, 'deny-ingress', { podSelector: ALL, ingress: [] });
const onlyYToXa = () => reach().deny('x/*', 'x/a').deny('z/*', 'x/a');
const fromYPodA = [podsInNamespaces(podA, sel({ [NS_NAME]: 'y' }))];

const UPSTREAM_UDP_SCTP: readonly ConformanceCase[] = [
  policyCase("UDP: should support a 'default-deny-ingress' policy", [denyIngress('x')], udp80(reach().denyIngress('x/*'))),
  policyCase(
    'UDP: should enforce policy based on Ports',
    [xaIngress('allow-ns-y-udp-81', [namespaces({ ns: 'y' })], [port(81, 'UDP')])],
    udp81(onlyYToXa()),
  ),
  policyCase(
    'UDP: should enforce policy to allow traffic only from a pod in a different namespace based on PodSelector and NamespaceSelector',
    [xaIngress('allow-ns-y-pod-a', fromYPodA)],
    udp80(reach().allowOnlyFrom('y/a', 'x/a')),
  ),
  policyCase("SCTP: should support a 'default-deny-ingress' policy", [denyIngress('x')], sctp80(reach().denyIngress('x/*'))),
  policyCase(
    'SCTP: should enforce policy based on Ports',
    [xaIngress('allow-ns-y-sctp-81', [namespaces({ ns: 'y' })], [port(81, 'SCTP')])],
    sctp81(onlyYToXa()),
  ),
  policyCase(
    'SCTP: should enforce policy to allow traffic only from a pod in a different namespace based on PodSelector and NamespaceSelector',
    [xaIngress('allow-ns-y-pod-a', fromYPodA)],
    sctp80(reach().allowOnlyFrom('y/a', 'x/a')),
  ),
];

const PORTS_AND_PROTOCOLS: readonly ConformanceCase[] = [
  policyCase(
    'an SCTP-only rule lets SCTP through and keeps TCP on the same port shut',
    [denyIngress('x'), xaIngress('allow-sctp-81', undefined, [port(81, 'SCTP')])],
    sctp81(reach().denyIngress(['x/b', 'x/c'])),
    tcp81(reach().denyIngress('x/*')),
  ),
  policyCase(
    'a protocol-only port (SCTP, no number) allows every SCTP port and no TCP',
    [xaIngress('allow-any-sctp', undefined, [anyPortOf('SCTP')])],
    sctp80(allReachable()),
    sctp81(allReachable()),
    tcp80(reach().denyIngress('x/a')),
  ),
  policyCase(
    'endPort: an ingress range 81-90 opens 81 and not 80',
    [xaIngress('allow-81-90', undefined, [portRange(81, 90)])],
    tcp81(allReachable()),
    tcp80(reach().denyIngress('x/a')),
  ),
  policyCase(
    'endPort: an egress range 79-80 opens 80 and not 81',
    [netpol('x', 'egress-79-80', { podSelector: ALL, policyTypes: ['Egress'], egress: [{ ports: [portRange(79, 80)] }] })],
    tcp80(allReachable()),
    tcp81(reach().denyEgress('x/*')),
  ),
  policyCase(
    'endPort: a UDP range from namespace y opens UDP only',
    [xaIngress('allow-ns-y-udp-80-81', [namespaces({ ns: 'y' })], [portRange(80, 81, 'UDP')])],
    udp81(onlyYToXa()),
    tcp81(reach().denyIngress('x/a')),
  ),
  policyCase(
    'several ports in one rule: TCP 80 and UDP 81, nothing else',
    [xaIngress('allow-tcp-80-udp-81', undefined, [port(80, 'TCP'), port(81, 'UDP')])],
    tcp80(allReachable()),
    tcp81(reach().denyIngress('x/a')),
    udp81(allReachable()),
    udp80(reach().denyIngress('x/a')),
  ),
  policyCase(
    'a named UDP port (serve-81-udp) opens UDP 81 only',
    [xaIngress('allow-serve-81-udp', undefined, [port('serve-81-udp', 'UDP')])],
    udp81(allReachable()),
    udp80(reach().denyIngress('x/a')),
    tcp81(reach().denyIngress('x/a')),
  ),
  // "protocol … defaults to TCP": serve-81-udp names no TCP port, so the rule matches nothing.
  policyCase(
    'a named port with the wrong protocol (serve-81-udp as TCP) opens nothing',
    [xaIngress('allow-serve-81-udp-as-tcp', undefined, [port('serve-81-udp')])],
    udp81(reach().denyIngress('x/a')),
    tcp81(reach().denyIngress('x/a')),
  ),
  {
    name: 'a named port resolves per destination pod (x/b calls port 81 serve-80-tcp)',
    steps: [
      step(
        'x/b declares serve-80-tcp as 81; allow serve-80-tcp into every x pod',
        (c) => {
          c.setPodPorts('x/b', [{ name: 'serve-80-tcp', containerPort: 81, protocol: 'TCP' }]);
          c.setPolicies([netpol('x', 'allow-serve-80-tcp', { podSelector: ALL, ingress: [{ ports: [port('serve-80-tcp')] }] })]);
        },
        tcp80(reach().denyIngress('x/b')),
        tcp81(reach().denyIngress(['x/a', 'x/c'])),
      ),
    ],
  },
  {
    name: 'egress to a named port skips destinations without that name',
    steps: [
      step(
        'y/b declares no ports; x/a may send to serve-81-tcp only',
        (c) => {
          c.setPodPorts('y/b', []);
          c.setPolicies([
            netpol('x', 'egress-serve-81-tcp', { podSelector: podA, policyTypes: ['Egress'], egress: [{ ports: [port('serve-81-tcp')] }] }),
          ]);
        },
        tcp81(reach().deny('x/a', 'y/b')),
        tcp80(reach().denyEgress('x/a')),
      ),
    ],
  },
];

describeConformance('conformance: protocols and ports (UDP, SCTP, endPort, named ports)', [...UPSTREAM_UDP_SCTP, ...PORTS_AND_PROTOCOLS]);
// The same cases over IPv6 on a dual-stack sandbox, neighbour caches flushed before each probe round
// (see upstream-ipv6.test.ts): none of them names an address, so the expected matrices are the same.
describeConformance('conformance: protocols and ports over IPv6', [...UPSTREAM_UDP_SCTP, ...PORTS_AND_PROTOCOLS], undefined, { family: 6 });
