"""A DNS server, a client that looks names up then connects, a TCP listener and a forger, for the DNS egress tests.
JSON lines on stdin/stdout; the first line out is {"ready": true}.

  {"id", "op": "serve-dns", "addrs": [...], "records": {name: [{"type": "A"|"AAAA"|"CNAME", "value", "ttl"}]}}
      answer A/AAAA queries over UDP and TCP on port 53 of each address: the CNAME chain from the queried name,
      then that name's A/AAAA records. "unsolicited": {name: [record]} also sends, before the real answer, an
      answer with another transaction id carrying those records (it must grant nothing).
  {"id", "op": "listen-tcp", "addrs": [...], "port"}  accept and close connections
  {"id", "op": "lookup-connect", "server", "name", "type", "port", "count", "tcp", "timeoutMs"}
      `count` times: look the name up (new socket, random id; "{i}" in the name is the try's number), then at
      once connect to the first address;
      → {"id", "ok": n, "failures": [...], "addresses": [...]}
  {"id", "op": "connect", "ip", "port", "timeoutMs"}  → {"id", "ok": bool}
  {"id", "op": "forge", "dst", "ports": [...], "name", "address", "type"}  unsolicited answers from port 53
"""
import json, os, random, socket, struct, sys, threading, time

lock = threading.Lock()
records = {}
unsolicited = {}
TYPES = {"A": 1, "AAAA": 28, "CNAME": 5}


def out(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def enc_name(name):
    b = b""
    for label in name.strip(".").split("."):
        b += bytes([len(label)]) + label.encode()
    return b + b"\0"


def read_name(msg, off):
    labels = []
    jumped = False
    end = off
    for _ in range(128):
        n = msg[off]
        if n & 0xC0 == 0xC0:
            if not jumped:
                end = off + 2
            off = ((n & 0x3F) << 8) | msg[off + 1]
            jumped = True
            continue
        if n == 0:
            if not jumped:
                end = off + 1
            return ".".join(labels), end
        labels.append(msg[off + 1 : off + 1 + n].decode("latin1"))
        off += 1 + n
    raise ValueError("name loop")


def rdata(r):
    if r["type"] == "A":
        return socket.inet_pton(socket.AF_INET, r["value"])
    if r["type"] == "AAAA":
        return socket.inet_pton(socket.AF_INET6, r["value"])
    return enc_name(r["value"])


def answer_for(query, extra=None):
    qid, flags = struct.unpack("!HH", query[:4])
    qname, off = read_name(query, 12)
    qtype = struct.unpack("!H", query[off : off + 2])[0]
    question = query[12 : off + 4]
    chain = []
    name = qname.lower()
    if extra is None:
        for _ in range(16):
            cn = [r for r in records.get(name, []) if r["type"] == "CNAME"]
            if not cn:
                break
            chain.append((name, cn[0]))
            name = cn[0]["value"].lower()
        final = [(name, r) for r in records.get(name, []) if TYPES[r["type"]] == qtype]
        rrs = chain + final
    else:
        rrs = [(qname, r) for r in extra]
    body = b"".join(enc_name(n) + struct.pack("!HHIH", TYPES[r["type"]], 1, r["ttl"], len(rdata(r))) + rdata(r) for n, r in rrs)
    rcode = 0 if rrs or qname.lower() in records else 3
    return struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(rrs), 0, 0) + question + body, qname.lower(), qid


def serve_udp(addr):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((addr, 53))

    def loop():
        while True:
            data, peer = s.recvfrom(65535)
            try:
                msg, qname, qid = answer_for(data)
                if qname in unsolicited:
                    fake, _, _ = answer_for(data, unsolicited[qname])
                    s.sendto(struct.pack("!H", (qid + 1) & 0xFFFF) + fake[2:], peer)
                s.sendto(msg, peer)
            except Exception as e:  # a bad query: no answer
                sys.stderr.write("dns-peer: %r\n" % e)

    threading.Thread(target=loop, daemon=True).start()


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk:
            raise EOFError()
        b += chunk
    return b


def serve_tcp(addr):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 53))
    s.listen(128)

    def conn(c):
        try:
            while True:
                n = struct.unpack("!H", recv_exact(c, 2))[0]
                msg, _, _ = answer_for(recv_exact(c, n))
                framed = struct.pack("!H", len(msg)) + msg
                # Two segments: the length prefix and the start, then the rest (the agent must reassemble).
                c.sendall(framed[:7])
                time.sleep(0.002)
                c.sendall(framed[7:])
        except Exception:
            pass
        finally:
            c.close()

    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=conn, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def listen_tcp(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    s.listen(1024)

    def loop():
        while True:
            c, _ = s.accept()
            c.close()

    threading.Thread(target=loop, daemon=True).start()


def parse_addresses(msg, qid, qtype):
    rid, flags, qd, an = struct.unpack("!HHHH", msg[:8])
    if rid != qid:
        return None
    off = 12
    for _ in range(qd):
        _, off = read_name(msg, off)
        off += 4
    addrs = []
    for _ in range(an):
        _, off = read_name(msg, off)
        t, _, _, ln = struct.unpack("!HHIH", msg[off : off + 10])
        off += 10
        if t == qtype:
            fam = socket.AF_INET if t == 1 else socket.AF_INET6
            addrs.append(socket.inet_ntop(fam, msg[off : off + ln]))
        off += ln
    return addrs


def lookup(server, name, qtype, tcp, timeout):
    fam = socket.AF_INET6 if ":" in server else socket.AF_INET
    qid = random.randint(0, 0xFFFF)
    query = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + enc_name(name) + struct.pack("!HH", qtype, 1)
    deadline = time.time() + timeout
    if tcp:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect((server, 53))
            s.sendall(struct.pack("!H", len(query)) + query)
            n = struct.unpack("!H", recv_exact(s, 2))[0]
            return parse_addresses(recv_exact(s, n), qid, qtype)
        finally:
            s.close()
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.sendto(query, (server, 53))
        while True:
            s.settimeout(max(0.001, deadline - time.time()))
            data, _ = s.recvfrom(65535)
            addrs = parse_addresses(data, qid, qtype)
            if addrs is not None:  # an answer with another id is not ours (the stub resolver's check)
                return addrs
    finally:
        s.close()


def connect(ip, port, timeout):
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.settimeout(timeout)
    try:
        c.connect((ip, port))
        return True
    except Exception:
        return False
    finally:
        c.close()


def forge(req):
    fam = socket.AF_INET6 if ":" in req["dst"] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", 53))
    rtype = "AAAA" if ":" in req["address"] else "A"
    for port in req["ports"]:
        qid = random.randint(0, 0xFFFF)
        rec = {"type": rtype, "value": req["address"], "ttl": 3600}
        msg = (
            struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0)
            + enc_name(req["name"])
            + struct.pack("!HH", TYPES[rtype], 1)
            + enc_name(req["name"])
            + struct.pack("!HHIH", TYPES[rtype], 1, 3600, len(rdata(rec)))
            + rdata(rec)
        )
        s.sendto(msg, (req["dst"], port))
    s.close()


out({"ready": True})
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    rid = req.get("id")
    try:
        if op == "serve-dns":
            records = {k.lower(): v for k, v in req.get("records", {}).items()}
            unsolicited = {k.lower(): v for k, v in req.get("unsolicited", {}).items()}
            for a in req["addrs"]:
                serve_udp(a)
                serve_tcp(a)
            out({"id": rid})
        elif op == "set-records":
            records = {k.lower(): v for k, v in req.get("records", {}).items()}
            out({"id": rid})
        elif op == "listen-tcp":
            for a in req["addrs"]:
                listen_tcp(a, req["port"])
            out({"id": rid})
        elif op == "lookup-connect":
            ok, failures, seen = 0, [], []
            qtype = TYPES[req.get("type", "A")]
            timeout = req.get("timeoutMs", 2000) / 1000
            for i in range(req.get("count", 1)):
                try:
                    name = req["name"].replace("{i}", str(i))
                    addrs = lookup(req["server"], name, qtype, req.get("tcp", False), timeout)
                except Exception as e:
                    failures.append("lookup %d: %r" % (i, e))
                    continue
                if not addrs:
                    failures.append("lookup %d: no address" % i)
                    continue
                for a in addrs:
                    if a not in seen:
                        seen.append(a)
                if connect(addrs[0], req["port"], timeout):
                    ok += 1
                else:
                    failures.append("connect %d to %s refused or timed out" % (i, addrs[0]))
            out({"id": rid, "ok": ok, "failures": failures[:10], "failed": len(failures), "addresses": seen})
        elif op == "connect":
            out({"id": rid, "ok": connect(req["ip"], req["port"], req.get("timeoutMs", 1000) / 1000)})
        elif op == "forge":
            forge(req)
            out({"id": rid})
        else:
            out({"id": rid, "error": "unknown op %s" % op})
    except Exception as e:
        out({"id": rid, "error": repr(e)})
