#!/usr/bin/env python3
"""IPv6 in a pod's network namespace as an honest pod and as a forger would use it.

One process per pod netns, JSON lines in and out (first line {"ready": true}):
  {"id", "op": "sink", "port"}                         record every UDP datagram to [::]:port and 0.0.0.0:port
  {"id", "op": "sunk"}                                 -> {"datagrams": [[src, text], ...]}
  {"id", "op": "sendfrom", "src", "ip", "port", "text"} one UDP datagram from `src`, held or not
        (IPV6_TRANSPARENT lets a socket bind to an address the pod does not hold); link-local
        addresses are scoped to eth0
  {"id", "op": "send", "ip", "port", "text"}          one plain UDP datagram to `ip` (either family; broadcast
        allowed; link-local and link-scope multicast addresses are scoped to eth0)
  {"id", "op": "tagged", "mac", "src", "ip", "port", "text"}  one IPv4 UDP datagram in an 802.1Q frame with
        VLAN id 0 (a priority tag, which receivers treat as untagged), written raw to eth0 for `mac`
  {"id", "op": "na", "target", "iface"?}               unsolicited Neighbour Advertisement to ff02::1,
        Override set, "<target> is at <our MAC>" (ND spoofing); the source is our link-local address
  {"id", "op": "ra", "iface"?}                         Router Advertisement to ff02::1 (lifetime 1800 s):
        "I am a default router" (rogue RA)
ND messages go out of a raw ICMPv6 socket: the kernel fills in the checksum, and hop limit 255 is set
as RFC 4861 requires (receivers drop ND with any other).
"""

import asyncio
import json
import os
import socket
import struct
import sys

IPV6_TRANSPARENT = 75
ND_NEIGHBOR_ADVERT, ND_ROUTER_ADVERT = 136, 134


def mac_of(iface):
    return bytes.fromhex(open(f"/sys/class/net/{iface}/address").read().strip().replace(":", ""))


def send_nd(iface, message):
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
    for _ in range(3):
        s.sendto(message, ("ff02::1", 0, 0, socket.if_nametoindex(iface)))
    s.close()


class Peer:
    def __init__(self, loop):
        self.loop = loop
        self.sunk = []

    async def handle(self, req):
        op = req["op"]
        iface = req.get("iface", "eth0")
        if op == "sink":
            peer = self

            class Sink(asyncio.DatagramProtocol):
                def datagram_received(self, data, addr):
                    peer.sunk.append([addr[0].split("%")[0], data.decode(errors="replace")])

            # One socket per family: a dual-stack IPv6 socket hears IPv4 broadcast but not IPv4 multicast.
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.bind(("::", int(req["port"])))
            await self.loop.create_datagram_endpoint(Sink, sock=v6)
            v4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            v4.bind(("0.0.0.0", int(req["port"])))
            await self.loop.create_datagram_endpoint(Sink, sock=v4)
            return {}
        if op == "sunk":
            return {"datagrams": list(self.sunk)}
        if op == "sendfrom":
            # Link-local addresses need the interface as their scope.
            scope = lambda ip: socket.if_nametoindex(iface) if ip.lower().startswith("fe80:") else 0
            s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_TRANSPARENT, 1)
            s.bind((req["src"], 0, 0, scope(req["src"])))
            s.sendto(req["text"].encode(), (req["ip"], int(req["port"]), 0, scope(req["ip"])))
            s.close()
            return {}
        if op == "send":
            ip = req["ip"]
            if ":" in ip:
                link = ip.lower().startswith(("fe80:", "ff02:"))
                s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
                target = (ip, int(req["port"]), 0, socket.if_nametoindex(iface) if link else 0)
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
                target = (ip, int(req["port"]))
            s.sendto(req["text"].encode(), target)
            s.close()
            return {}
        if op == "tagged":
            src, dst = socket.inet_aton(req["src"]), socket.inet_aton(req["ip"])
            payload = req["text"].encode()
            udp = struct.pack("!HHHH", 40000, int(req["port"]), 8 + len(payload), 0) + payload
            header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
            words = sum(struct.unpack("!10H", header))
            while words >> 16:
                words = (words & 0xFFFF) + (words >> 16)
            header = header[:10] + struct.pack("!H", ~words & 0xFFFF) + header[12:]
            frame = bytes.fromhex(req["mac"].replace(":", "")) + mac_of(iface) + struct.pack("!HHH", 0x8100, 0, 0x0800) + header + udp
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((iface, 0))
            s.send(frame)
            s.close()
            return {}
        if op == "na":
            # type, code, checksum (kernel), flags R=0 S=0 O=1, target, option 2 (target link-layer address).
            target = socket.inet_pton(socket.AF_INET6, req["target"])
            message = struct.pack("!BBHI", ND_NEIGHBOR_ADVERT, 0, 0, 0x20000000) + target + struct.pack("!BB", 2, 1) + mac_of(iface)
            send_nd(iface, message)
            return {}
        if op == "ra":
            # cur hop limit 64, no flags, router lifetime 1800 s, reachable 0, retrans 0; option 1 (source link-layer).
            message = struct.pack("!BBHBBHII", ND_ROUTER_ADVERT, 0, 0, 64, 0, 1800, 0, 0) + struct.pack("!BB", 1, 1) + mac_of(iface)
            send_nd(iface, message)
            return {}
        raise ValueError(f"unknown op {op!r}")


def reply(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def main():
    loop = asyncio.get_running_loop()
    peer = Peer(loop)
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    reply({"ready": True, "pid": os.getpid()})
    while True:
        line = await stdin.readline()
        if not line:
            break
        req = json.loads(line)
        try:
            reply({"id": req.get("id"), "ok": True, **(await peer.handle(req))})
        except Exception as exc:  # reported, never a crash
            reply({"id": req.get("id"), "ok": False, "error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    asyncio.run(main())
