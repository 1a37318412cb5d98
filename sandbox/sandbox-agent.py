#!/usr/bin/env python3
"""netfence sandbox pod agent: one per pod (or node) network namespace.

Serves TCP and UDP echo on the given ports and answers SCTP INITs with INIT-ACKs, and runs
reachability probes on request. Speaks JSON lines: the first line it prints is
{"ready": true, ...} once every server is bound; after that each request line
{"id", "op": "probe", "proto", "ip", "port", "timeoutMs"} gets one reply line {"id", "ok", "error"?}.
{"id", "op": "ping"} answers {"id", "ok": true}. It exits when stdin closes, so it cannot outlive
the process that started it.

The kernel here has no SCTP sockets, but netfilter tracks SCTP, so SCTP is emulated with a raw
socket for protocol 132 per family (IPv4 and, where the namespace has IPv6, IPv6): the server half answers an INIT to a served port with an INIT-ACK
(verification tag = the INIT's initiate tag, CRC32c checksum), which is what conntrack needs to
see a valid-looking handshake. The same raw socket also keeps the kernel from answering SCTP with
ICMP "protocol unreachable", since a raw socket consumed the packet.

Every server listens on IPv4 and IPv6 (separate sockets: asyncio sets IPV6_V6ONLY), and probes take
either family's address, so one agent serves a dual-stack, IPv4-only or IPv6-only pod alike.

UDP and SCTP answers leave from the address that was probed, as a UDP server bound to that address
would answer (upstream's centaur listens on $(HOST_IP) for this reason): a node has several addresses,
and a wildcard socket's reply takes the source its route picks, so a pod probing its own node's
underlay address would get the answer from the cni0 gateway address and drop it. The destination of
each datagram is read with IP_PKTINFO / IPV6_RECVPKTINFO and given back as the source with sendmsg.
"""

import argparse
import asyncio
import fcntl
import ipaddress
import json
import os
import random
import socket
import struct
import sys

IPPROTO_SCTP = 132
CHUNK_INIT = 1
CHUNK_INIT_ACK = 2
PARAM_STATE_COOKIE = 7
# <linux/in.h>; Python 3.11's socket module has no IP_PKTINFO constant. struct in_pktinfo is
# {int ipi_ifindex; struct in_addr ipi_spec_dst; struct in_addr ipi_addr}.
IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)
IPV6_RECVPKTINFO = getattr(socket, "IPV6_RECVPKTINFO", 49)
IPV6_PKTINFO = getattr(socket, "IPV6_PKTINFO", 50)
CMSG_SPACE = 64


def enable_pktinfo(sock, v6):
    """Asks the kernel for each datagram's destination address (ancillary data on recvmsg)."""
    if v6:
        sock.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVPKTINFO, 1)
    else:
        sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)


def destination_of(ancdata, v6):
    """The destination address of a datagram from recvmsg's ancillary data, or None."""
    for level, kind, data in ancdata:
        if v6 and level == socket.IPPROTO_IPV6 and kind == IPV6_PKTINFO and len(data) >= 16:
            return socket.inet_ntop(socket.AF_INET6, data[:16])  # in6_pktinfo: ipi6_addr first
        if not v6 and level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(data) >= 12:
            return socket.inet_ntoa(data[8:12])  # ipi_addr: the header's destination
    return None


def source_cmsg(src):
    """Ancillary data for sendmsg that makes `src` the packet's source (interface left to the route)."""
    if src is None:
        return []
    if ":" in src:
        return [(socket.IPPROTO_IPV6, IPV6_PKTINFO, socket.inet_pton(socket.AF_INET6, src) + struct.pack("@i", 0))]
    return [(socket.IPPROTO_IP, IP_PKTINFO, struct.pack("@i", 0) + socket.inet_aton(src) + socket.inet_aton("0.0.0.0"))]


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def sctp_packet(sport, dport, vtag, chunk_type, body):
    """Common header + one chunk, checksum filled in (RFC 9260 §6.8: CRC32c, sent little-endian as Linux does)."""
    chunk = struct.pack("!BBH", chunk_type, 0, 4 + len(body)) + body
    chunk += b"\0" * (-len(chunk) % 4)
    packet = bytearray(struct.pack("!HHII", sport, dport, vtag, 0) + chunk)
    struct.pack_into("<I", packet, 8, crc32c(bytes(packet)))
    return bytes(packet)


def init_body(init_tag, tsn, extra=b""):
    # initiate tag, a_rwnd, outbound streams, inbound streams, initial TSN
    return struct.pack("!IIHHI", init_tag, 65535, 10, 10, tsn) + extra


def parse_sctp(datagram):
    """Raw IPv4 datagram -> (src_ip, dst_ip, sport, dport, vtag, chunk_type, chunk_body) or None."""
    if len(datagram) < 20:
        return None
    ihl = (datagram[0] & 0x0F) * 4
    sctp = datagram[ihl:]
    if len(sctp) < 16:
        return None
    sport, dport, vtag, _ = struct.unpack("!HHII", sctp[:12])
    chunk_type, _, length = struct.unpack("!BBH", sctp[12:16])
    src = socket.inet_ntoa(datagram[12:16])
    dst = socket.inet_ntoa(datagram[16:20])
    return src, dst, sport, dport, vtag, chunk_type, sctp[16:12 + length]


def parse_sctp6(payload, src, dst):
    """IPv6 raw sockets deliver the payload without the IP header; the addresses come from recvmsg."""
    if len(payload) < 16:
        return None
    sport, dport, vtag, _ = struct.unpack("!HHII", payload[:12])
    chunk_type, _, length = struct.unpack("!BBH", payload[12:16])
    return src, dst, sport, dport, vtag, chunk_type, payload[16:12 + length]


def canonical(ip):
    return ipaddress.ip_address(ip.split("%")[0]).compressed


class Sctp:
    """Server and client halves of the emulated handshake, sharing one raw socket per family."""

    def __init__(self, loop, ports):
        self.loop = loop
        self.ports = set(ports)
        self.pending = {}  # (peer ip, peer port, our port, our init tag) -> future
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, IPPROTO_SCTP)
        self.sock.setblocking(False)
        loop.add_reader(self.sock.fileno(), self._readable, self.sock, False)
        try:
            self.sock6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, IPPROTO_SCTP)
            self.sock6.setblocking(False)
            enable_pktinfo(self.sock6, True)  # IPv6 raw sockets hand over no header: the destination comes this way
            loop.add_reader(self.sock6.fileno(), self._readable, self.sock6, True)
        except OSError:
            self.sock6 = None  # IPv6 disabled in this namespace: IPv4 only

    def _readable(self, sock, v6):
        while True:
            try:
                datagram, ancdata, _flags, addr = sock.recvmsg(65535, CMSG_SPACE)
            except (BlockingIOError, InterruptedError):
                return
            parsed = parse_sctp6(datagram, canonical(addr[0]), destination_of(ancdata, True)) if v6 else parse_sctp(datagram)
            if parsed is None:
                continue
            src, dst, sport, dport, vtag, chunk_type, body = parsed
            if chunk_type == CHUNK_INIT and vtag == 0 and dport in self.ports and len(body) >= 16:
                peer_tag = struct.unpack("!I", body[:4])[0]
                cookie = os.urandom(16)
                param = struct.pack("!HH", PARAM_STATE_COOKIE, 4 + len(cookie)) + cookie
                reply = sctp_packet(dport, sport, peer_tag, CHUNK_INIT_ACK,
                                    init_body(random.getrandbits(32) or 1, random.getrandbits(32), param))
                self._send(reply, src, dst)
            elif chunk_type == CHUNK_INIT_ACK:
                future = self.pending.pop((src, sport, dport, vtag), None)
                if future is not None and not future.done():
                    future.set_result(True)

    def _sock_for(self, ip):
        if ":" not in ip:
            return self.sock
        if self.sock6 is None:
            raise OSError("IPv6 is not available in this namespace")
        return self.sock6

    def _send(self, packet, ip, src=None):
        """Sends from `src` when given: an INIT-ACK must come from the address the INIT was sent to."""
        try:
            self._sock_for(ip).sendmsg([packet], source_cmsg(src), 0, (ip, 0))
        except OSError:
            pass  # unreachable peers show up as probe timeouts, as on a real network

    async def probe(self, ip, port, timeout):
        ip = canonical(ip)
        sport = random.randint(32768, 60999)
        tag = random.getrandbits(32) or 1
        key = (ip, port, sport, tag)
        future = self.loop.create_future()
        self.pending[key] = future
        packet = sctp_packet(sport, port, 0, CHUNK_INIT, init_body(tag, random.getrandbits(32)))
        try:
            self._sock_for(ip).sendto(packet, (ip, 0))
            await asyncio.wait_for(future, timeout)
        finally:
            self.pending.pop(key, None)


def announce(ifname):
    """Sends a gratuitous ARP for the interface's address, as CNI's bridge plugin does for a new pod.

    Without it, neighbours that cached a previous owner of a reused IP keep sending to the old MAC
    until their entry goes stale, and the new pod looks unreachable for tens of seconds.

    IPv6 has no counterpart here on purpose: an unsolicited NA only updates entries that exist
    (RFC 4861 §7.2.5), and tests must see neighbour discovery happen. An IPv6-only pod has no IPv4
    address to announce.
    """
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
    try:
        ifreq = struct.pack("256s", ifname.encode()[:15])
        try:
            ip = fcntl.ioctl(sock.fileno(), 0x8915, ifreq)[20:24]  # SIOCGIFADDR
        except OSError:
            return  # no IPv4 address (an IPv6-only pod)
        mac = fcntl.ioctl(sock.fileno(), 0x8927, ifreq)[18:24]  # SIOCGIFHWADDR
        sock.bind((ifname, 0))
        arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, ip, b"\0" * 6, ip)
        sock.send(b"\xff" * 6 + mac + struct.pack("!H", 0x0806) + arp)
    finally:
        sock.close()


class UdpEcho:
    """UDP echo on a wildcard socket that answers from the address each datagram was sent to."""

    def __init__(self, loop, sock, v6):
        self.sock, self.v6 = sock, v6
        sock.setblocking(False)
        enable_pktinfo(sock, v6)
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self):
        while True:
            try:
                data, ancdata, _flags, addr = self.sock.recvmsg(65535, CMSG_SPACE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue  # e.g. a queued ICMP error from an earlier reply
            try:
                self.sock.sendmsg([data], source_cmsg(destination_of(ancdata, self.v6)), 0, addr)
            except OSError:
                pass  # unreachable peers show up as probe timeouts, as on a real network


class UdpClient(asyncio.DatagramProtocol):
    def __init__(self, future):
        self.future = future

    def datagram_received(self, data, addr):
        if not self.future.done():
            self.future.set_result(data)

    def error_received(self, exc):
        if not self.future.done():
            self.future.set_exception(exc)


async def tcp_accept(reader, writer):
    writer.close()


async def probe_tcp(loop, ip, port, timeout):
    _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), timeout)
    writer.close()


async def probe_udp(loop, ip, port, timeout):
    future = loop.create_future()
    transport, _ = await loop.create_datagram_endpoint(lambda: UdpClient(future), remote_addr=(ip, port))
    try:
        payload = os.urandom(8)
        transport.sendto(payload)
        data = await asyncio.wait_for(future, timeout)
        if data != payload:
            raise ValueError("echo mismatch")
    finally:
        transport.close()


def describe(exc):
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    return f"{type(exc).__name__}: {exc}".strip()


def reply(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def handle(loop, sctp, request):
    rid = request.get("id")
    try:
        op = request.get("op")
        if op == "ping":
            reply({"id": rid, "ok": True})
            return
        if op != "probe":
            raise ValueError(f"unknown op {op!r}")
        proto = str(request["proto"]).upper()
        ip, port = request["ip"], int(request["port"])
        timeout = float(request.get("timeoutMs", 1000)) / 1000.0
        if proto == "TCP":
            await probe_tcp(loop, ip, port, timeout)
        elif proto == "UDP":
            await probe_udp(loop, ip, port, timeout)
        elif proto == "SCTP":
            await sctp.probe(ip, port, timeout)
        else:
            raise ValueError(f"unknown protocol {proto!r}")
        reply({"id": rid, "ok": True})
    except Exception as exc:  # every failure is a probe result, never a crash
        reply({"id": rid, "ok": False, "error": describe(exc)})


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ports", default="80,81")
    parser.add_argument("--name", default="")
    parser.add_argument("--announce", default="", help="interface to send a gratuitous ARP on at start")
    args = parser.parse_args()
    ports = [int(p) for p in args.ports.split(",") if p]
    loop = asyncio.get_running_loop()

    servers = []
    ipv6 = socket.has_ipv6 and os.path.exists("/proc/net/if_inet6")
    for port in ports:
        servers.append(await asyncio.start_server(tcp_accept, "0.0.0.0", port, reuse_address=True))
        udp4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp4.bind(("0.0.0.0", port))
        servers.append(UdpEcho(loop, udp4, False))
        if ipv6:
            servers.append(await asyncio.start_server(tcp_accept, "::", port, reuse_address=True))
            # asyncio sets IPV6_V6ONLY for TCP listeners but not for UDP: without it "::" collides with 0.0.0.0.
            udp6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            udp6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            udp6.bind(("::", port))
            servers.append(UdpEcho(loop, udp6, True))
    sctp = Sctp(loop, ports)
    if args.announce:
        announce(args.announce)

    stdin = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    reply({"ready": True, "name": args.name, "pid": os.getpid(), "ports": ports})

    tasks = set()
    while True:
        line = await stdin.readline()
        if not line:
            break  # our parent is gone: exit so nothing outlives it
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            reply({"id": None, "ok": False, "error": f"bad request: {exc}"})
            continue
        task = asyncio.ensure_future(handle(loop, sctp, request))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
