#!/usr/bin/env python3
"""Long-lived flows between two sandbox pods, with the test deciding who speaks when.

One process per pod netns, JSON lines in and out (first line {"ready": true}):
  {"id", "op": "listen", "proto": "TCP"|"UDP"|"SCTP", "port", "host"?}     serve that port (TCP and UDP
        on `host`, default 0.0.0.0; "::" serves IPv6 and IPv4)
  {"id", "op": "connect", "proto", "ip", "port", "flow"}                   open flow `flow`: the client
        sends "hello <flow>", the server records the flow under that name and answers "ack <flow>";
        the reply arrives before this request answers, so the flow is established both ways
  {"id", "op": "send", "flow", "text"}                                     one message on the flow
  {"id", "op": "received", "flow"}                                         -> {"messages": [...]}
Messages are lines for TCP, datagrams for UDP, DATA chunks for SCTP.

SCTP is emulated with a raw socket per family (the kernel has no SCTP sockets, DESIGN §8): INIT,
INIT-ACK, COOKIE-ECHO, COOKIE-ACK with the verification tags conntrack checks, then DATA chunks, so
conntrack holds an ESTABLISHED SCTP entry. An IPv6 peer address (one with ':') goes over the IPv6
raw socket; SCTP's CRC32c covers no pseudo-header, so the same packets serve both families. The sandbox agent's raw socket in the same netns sees these packets
too and ignores them (it answers INITs to its own ports only).
"""

import asyncio
import ipaddress
import json
import os
import random
import socket
import struct
import sys

IPPROTO_SCTP = 132
DATA, INIT, INIT_ACK, COOKIE_ECHO, COOKIE_ACK = 0, 1, 2, 10, 11


def _table():
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


CRC = _table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def sctp(sport, dport, vtag, ctype, body):
    chunk = struct.pack("!BBH", ctype, 0, 4 + len(body)) + body
    chunk += b"\0" * (-len(chunk) % 4)
    pkt = bytearray(struct.pack("!HHII", sport, dport, vtag, 0) + chunk)
    struct.pack_into("<I", pkt, 8, crc32c(bytes(pkt)))
    return bytes(pkt)


def init_body(tag):
    return struct.pack("!IIHHI", tag, 65535, 1, 1, random.getrandbits(32))


def canonical(ip):
    """One spelling per address, so an association's key matches what recvfrom reports."""
    return ipaddress.ip_address(ip.split("%")[0]).compressed


class Flow:
    def __init__(self):
        self.messages = []
        self.send = None


class Peer:
    def __init__(self, loop):
        self.loop = loop
        self.flows = {}
        self.waiters = {}
        self.servers = []
        self.sunk = []
        self.sctp_ports = set()
        self.sctp_assoc = {}  # (peer ip, peer port, our port) -> dict(flow, peer_tag, our_tag, tsn)
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, IPPROTO_SCTP)
        self.raw.setblocking(False)
        loop.add_reader(self.raw.fileno(), self.raw_readable, self.raw, False)
        try:
            self.raw6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, IPPROTO_SCTP)
            self.raw6.setblocking(False)
            loop.add_reader(self.raw6.fileno(), self.raw_readable, self.raw6, True)
        except OSError:
            self.raw6 = None  # IPv6 disabled in this namespace

    def got(self, name, text):
        flow = self.flows.setdefault(name, Flow())
        flow.messages.append(text)
        waiter = self.waiters.pop((name, text), None)
        if waiter and not waiter.done():
            waiter.set_result(True)

    async def wait_for(self, name, text, timeout):
        flow = self.flows.get(name)
        if flow and text in flow.messages:
            return
        fut = self.loop.create_future()
        self.waiters[(name, text)] = fut
        await asyncio.wait_for(fut, timeout)

    # ---- TCP ----------------------------------------------------------------------------------
    async def tcp_serve(self, reader, writer):
        name = None
        while True:
            line = await reader.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if name is None and text.startswith("hello "):
                name = text[6:]
                flow = self.flows.setdefault(name, Flow())
                flow.send = lambda t, w=writer: w.write((t + "\n").encode())
                writer.write(f"ack {name}\n".encode())
                continue
            if name is not None:
                self.got(name, text)

    async def tcp_read(self, name, reader):
        while True:
            line = await reader.readline()
            if not line:
                return
            self.got(name, line.decode().rstrip("\n"))

    # ---- UDP ----------------------------------------------------------------------------------
    def udp_server(self, port):
        peer = self
        names = {}

        class Proto(asyncio.DatagramProtocol):
            def connection_made(self, transport):
                self.transport = transport

            def datagram_received(self, data, addr):
                text = data.decode()
                if text.startswith("hello "):
                    name = text[6:]
                    names[addr] = name
                    flow = peer.flows.setdefault(name, Flow())
                    flow.send = lambda t, a=addr: self.transport.sendto(t.encode(), a)
                    self.transport.sendto(f"ack {name}".encode(), addr)
                elif addr in names:
                    peer.got(names[addr], text)

        return Proto

    def udp_client(self, name):
        peer = self

        class Proto(asyncio.DatagramProtocol):
            def datagram_received(self, data, addr):
                peer.got(name, data.decode())

        return Proto

    # ---- SCTP (raw) ---------------------------------------------------------------------------
    def raw_readable(self, sock, v6):
        while True:
            try:
                dgram, addr = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            if v6:
                # IPv6 raw sockets deliver the payload only; the source comes from recvfrom.
                src, body = canonical(addr[0]), dgram
            else:
                ihl = (dgram[0] & 0x0F) * 4
                src, body = socket.inet_ntoa(dgram[12:16]), dgram[ihl:]
            if len(body) < 16:
                continue
            sport, dport, vtag, _ = struct.unpack("!HHII", body[:12])
            ctype, _, length = struct.unpack("!BBH", body[12:16])
            chunk = body[16:12 + length]
            key = (src, sport, dport)
            assoc = self.sctp_assoc.get(key)
            if ctype == INIT and vtag == 0 and dport in self.sctp_ports:
                peer_tag = struct.unpack("!I", chunk[:4])[0]
                our_tag = random.getrandbits(32) or 1
                self.sctp_assoc[key] = {"flow": None, "peer_tag": peer_tag, "our_tag": our_tag, "tsn": 1}
                cookie = struct.pack("!HH", 7, 20) + os.urandom(16)
                self.raw_send(sctp(dport, sport, peer_tag, INIT_ACK, init_body(our_tag) + cookie), src)
            elif ctype == INIT_ACK and assoc is not None and vtag == assoc["our_tag"]:
                assoc["peer_tag"] = struct.unpack("!I", chunk[:4])[0]
                self.raw_send(sctp(dport, sport, assoc["peer_tag"], COOKIE_ECHO, os.urandom(16)), src)
            elif ctype == COOKIE_ECHO and assoc is not None:
                self.raw_send(sctp(dport, sport, assoc["peer_tag"], COOKIE_ACK, b""), src)
            elif ctype == COOKIE_ACK and assoc is not None:
                self.got(assoc["flow"], "__established__")
            elif ctype == DATA and assoc is not None and len(chunk) >= 12:
                text = chunk[12:].rstrip(b"\0").decode()
                if assoc["flow"] is None and text.startswith("hello "):
                    name = text[6:]
                    assoc["flow"] = name
                    flow = self.flows.setdefault(name, Flow())
                    flow.send = lambda t, k=key: self.sctp_data(k, t)
                    self.sctp_data(key, f"ack {name}")
                elif assoc["flow"] is not None:
                    self.got(assoc["flow"], text)

    def raw_send(self, pkt, ip):
        try:
            (self.raw6 if ":" in ip else self.raw).sendto(pkt, (ip, 0))
        except (OSError, AttributeError):
            pass  # no route, or no IPv6 here: the flow just does not get the packet

    def sctp_data(self, key, text):
        assoc = self.sctp_assoc[key]
        src, sport, dport = key
        payload = text.encode()
        body = struct.pack("!IHHI", assoc["tsn"], 0, 0, 0) + payload
        assoc["tsn"] += 1
        self.raw_send(sctp(dport, sport, assoc["peer_tag"], DATA, body), src)

    # ---- requests -----------------------------------------------------------------------------
    async def handle(self, req):
        op = req["op"]
        if op == "listen":
            proto, port, host = req["proto"], int(req["port"]), req.get("host", "0.0.0.0")
            if proto == "TCP":
                self.servers.append(await asyncio.start_server(self.tcp_serve, host, port, reuse_address=True))
            elif proto == "UDP":
                await self.loop.create_datagram_endpoint(self.udp_server(port), local_addr=(host, port))
            else:
                self.sctp_ports.add(port)
            return {}
        if op == "connect":
            proto, ip, port, name = req["proto"], req["ip"], int(req["port"]), req["flow"]
            flow = self.flows.setdefault(name, Flow())
            if proto == "TCP":
                reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), 3)
                flow.send = lambda t: writer.write((t + "\n").encode())
                asyncio.ensure_future(self.tcp_read(name, reader))
            elif proto == "UDP":
                transport, _ = await self.loop.create_datagram_endpoint(self.udp_client(name), remote_addr=(ip, port))
                flow.send = lambda t: transport.sendto(t.encode())
            else:
                sport = random.randint(32768, 60999)
                ip = canonical(ip)
                key = (ip, port, sport)
                tag = random.getrandbits(32) or 1
                self.sctp_assoc[key] = {"flow": name, "peer_tag": 0, "our_tag": tag, "tsn": 1}
                self.raw_send(sctp(sport, port, 0, INIT, init_body(tag)), ip)
                await self.wait_for(name, "__established__", 3)
                flow.messages.remove("__established__")
                flow.send = lambda t: self.sctp_data(key, t)
            flow.send(f"hello {name}")
            await self.wait_for(name, f"ack {name}", 3)
            flow.messages.remove(f"ack {name}")
            return {}
        if op == "send":
            self.flows[req["flow"]].send(req["text"])
            return {}
        if op == "sink":
            peer = self

            class Sink(asyncio.DatagramProtocol):
                def datagram_received(self, data, addr):
                    peer.sunk.append([addr[0], data.decode(errors="replace")])

            await self.loop.create_datagram_endpoint(Sink, local_addr=("0.0.0.0", int(req["port"])))
            return {}
        if op == "sunk":
            return {"datagrams": list(self.sunk)}
        if op == "sendfrom":
            # IP_TRANSPARENT: bind to and route from an address this pod does not hold, as a forger would.
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_IP, 19, 1)
            s.bind((req["src"], 0))
            s.sendto(req["text"].encode(), (req["ip"], int(req["port"])))
            s.close()
            return {}
        if op == "garp":
            # A gratuitous ARP reply, broadcast: "<claim> is at <our MAC>" (ARP poisoning).
            iface = req.get("iface", "eth0")
            mac = bytes.fromhex(open(f"/sys/class/net/{iface}/address").read().strip().replace(":", ""))
            claim = socket.inet_aton(req["claim"])
            frame = b"\xff" * 6 + mac + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac + claim + b"\xff" * 6 + claim
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((iface, 0))
            for _ in range(int(req.get("count", 3))):
                s.send(frame)
            s.close()
            return {}
        if op == "received":
            flow = self.flows.get(req["flow"])
            return {"messages": list(flow.messages) if flow else []}
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

    async def serve(req):
        try:
            reply({"id": req.get("id"), "ok": True, **(await peer.handle(req))})
        except Exception as exc:  # reported, never a crash
            reply({"id": req.get("id"), "ok": False, "error": f"{type(exc).__name__}: {exc}"})

    tasks = set()
    while True:
        line = await stdin.readline()
        if not line:
            break
        task = asyncio.ensure_future(serve(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


if __name__ == "__main__":
    asyncio.run(main())
