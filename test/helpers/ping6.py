#!/usr/bin/env python3
"""One ICMPv6 echo request to argv[1]; exit 0 on a matching echo reply within argv[2] seconds, else 1.

This machine has no ping binary. A raw ICMPv6 socket has the kernel fill in the checksum (RFC 3542 §3.1),
and sees every ICMPv6 message to this host, so replies are matched by identifier and sequence.
"""
import os
import select
import socket
import struct
import sys
import time

dst, timeout = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
size = int(sys.argv[3]) if len(sys.argv) > 3 else 0
sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
ident, seq = os.getpid() & 0xFFFF, 1
sock.sendto(struct.pack("!BBHHH", 128, 0, 0, ident, seq) + b"\xa5" * size, (dst, 0))
deadline = time.monotonic() + timeout
while True:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([sock], [], [], left)[0]:
        sys.exit(1)
    data, _ = sock.recvfrom(65535)
    if len(data) >= 8 and data[0] == 129 and struct.unpack("!HH", data[4:8]) == (ident, seq):
        sys.exit(0)
