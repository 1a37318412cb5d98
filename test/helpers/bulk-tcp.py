#!/usr/bin/env python3
"""A bulk TCP transfer for path MTU tests (the sandbox agent closes connections at once).

  bulk-tcp.py serve PORT BYTES CONNECTIONS   listens on IPv4 and IPv6, prints "ready"; per connection
                                             reads BYTES and answers b"ok"; exits after CONNECTIONS or 30 s.
  bulk-tcp.py send IP PORT BYTES TIMEOUT     sends BYTES, exits 0 once "ok" comes back, 1 on timeout.

Linux sets DF on TCP, so a segment larger than a link on the path is refused with an ICMP(v6)
"packet too big"/"fragmentation needed"; if that error never reaches the sender the transfer stalls.
"""
import select
import socket
import sys
import time


def serve(port, size, connections):
    listeners = []
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, port))
        s.listen(4)
        listeners.append(s)
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    done = 0
    while done < connections and time.monotonic() < deadline:
        ready, _, _ = select.select(listeners, [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            conn, _ = s.accept()
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            got = 0
            try:
                while got < size:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += len(chunk)
                if got >= size:
                    conn.sendall(b"ok")
            except OSError:
                pass
            conn.close()
            done += 1


def send(ip, port, size, timeout):
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((ip, port))
        s.sendall(b"\x5a" * size)
        sys.exit(0 if s.recv(2) == b"ok" else 1)
    except OSError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if sys.argv[1] == "serve":
    serve(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
else:
    send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
