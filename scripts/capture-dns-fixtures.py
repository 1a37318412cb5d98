#!/usr/bin/env python3
# Records the DNS messages test/unit/dns/ parses: a real server (dnsmasq) answers a real client (dig) across
# a veth pair between two scratch network namespaces, and a raw AF_PACKET socket on the client's end of the
# veth captures every frame; the UDP payloads and TCP segment payloads to and from port 53 are written,
# in order, as hex to test/unit/dns/fixtures/captured.json. Needs root, dnsmasq and dig (Debian:
# dnsmasq-base, bind9-dnsutils). Touches nothing outside the two namespaces it creates and removes.
#
#   python3 scripts/capture-dns-fixtures.py

import json, os, secrets, socket, struct, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, '..', 'test', 'unit', 'dns', 'fixtures', 'captured.json')
tag = secrets.token_hex(3)
SRV, CLI = f'dnsq-srv-{tag}', f'dnsq-cli-{tag}'
VS, VC = f'vds{tag}', f'vdc{tag}'


MARK = "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'mark', ('192.0.2.53', 9))"


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


# Each case: the dig arguments and what the fixture is called.
CASES = [
    ('a', ['good.example.test', 'A']),
    ('aaaa', ['good.example.test', 'AAAA']),
    ('cname-chain', ['alias.example.test', 'A']),
    ('mixed-case', ['GoOd.ExAmPlE.TeSt', 'A']),
    ('nxdomain', ['missing.example.test', 'A']),
    ('wildcard-sub', ['deep.sub.wild.example.test', 'A']),
    ('tcp-a', ['+tcp', 'good.example.test', 'A']),
    ('multi-a', ['many.example.test', 'A']),
]


def main():
    frames = []
    try:
        sh('ip', 'netns', 'add', SRV)
        sh('ip', 'netns', 'add', CLI)
        sh('ip', 'link', 'add', VS, 'netns', SRV, 'type', 'veth', 'peer', 'name', VC, 'netns', CLI)
        for ns, dev, addr, addr6 in ((SRV, VS, '192.0.2.53/24', 'fd00:53::53/64'), (CLI, VC, '192.0.2.10/24', 'fd00:53::10/64')):
            sh('ip', '-n', ns, 'link', 'set', 'lo', 'up')
            sh('ip', '-n', ns, 'addr', 'add', addr, 'dev', dev)
            sh('ip', '-n', ns, 'addr', 'add', addr6, 'dev', dev, 'nodad')
            sh('ip', '-n', ns, 'link', 'set', dev, 'up')
        dnsmasq = subprocess.Popen(
            ['ip', 'netns', 'exec', SRV, 'dnsmasq', '--keep-in-foreground', '--no-resolv', '--no-hosts', '--no-daemon',
             '--listen-address=192.0.2.53', '--bind-interfaces', '--port=53', '--log-facility=-',
             '--host-record=good.example.test,198.51.100.10,2001:db8::10', '--host-record=target.example.test,198.51.100.20',
             '--cname=alias.example.test,mid.example.test', '--cname=mid.example.test,target.example.test',
             '--address=/wild.example.test/203.0.113.7', '--host-record=many.example.test,198.51.100.31',
             '--host-record=many.example.test,198.51.100.32', '--local-ttl=300', '--local=/example.test/'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        # The sniffer runs in the client namespace: a raw socket belongs to the namespace that opens it.
        sniffer = subprocess.Popen(['ip', 'netns', 'exec', CLI, sys.executable, __file__, '--sniff', VC], stdout=subprocess.PIPE, text=True)
        assert sniffer.stdout is not None
        assert sniffer.stdout.readline().strip() == 'ready'
        for name, args in CASES:
            out = sh('ip', 'netns', 'exec', CLI, 'dig', '@192.0.2.53', '+tries=1', '+time=2', *args, check=False).stdout
            # A marker datagram (to the discard port) between cases.
            sh('ip', 'netns', 'exec', CLI, sys.executable, '-c', MARK, check=False)
            frames.append({'case': name, 'dig': args, 'status': next((l.strip() for l in out.splitlines() if 'status:' in l), '')})
        time.sleep(0.3)
        sniffer.terminate()
        captured = json.loads(sniffer.stdout.read() or '[]')
        dnsmasq.terminate()
        dnsmasq.wait()
    finally:
        sh('ip', 'netns', 'del', SRV, check=False)
        sh('ip', 'netns', 'del', CLI, check=False)
    # Split the capture at the marker pings: the n-th stretch belongs to the n-th case.
    stretches, current = [], []
    for c in captured:
        if c == 'marker':
            stretches.append(current)
            current = []
        else:
            current.append(c)
    for f, s in zip(frames, stretches):
        f['messages'] = s
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, 'w') as fh:
        json.dump({'capturedWith': 'scripts/capture-dns-fixtures.py: dnsmasq ' + sh('dnsmasq', '--version').stdout.split()[2]
                   + ', ' + sh('dig', '-v', check=False).stderr.strip() + ', AF_PACKET on the client veth',
                   'cases': frames}, fh, indent=1)
        fh.write('\n')
    print(f'wrote {OUT}')


def sniff(dev):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((dev, 0))
    out = []
    import signal

    def done(*_):
        sys.stdout.write(json.dumps(out))
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, done)
    print('ready', flush=True)
    while True:
        frame = s.recv(65535)
        ethertype = struct.unpack('!H', frame[12:14])[0]
        ip = frame[14:]
        if ethertype == 0x0800:
            proto, ihl = ip[9], (ip[0] & 0xF) * 4
            l4 = ip[ihl:]
        elif ethertype == 0x86DD:
            proto, l4 = ip[6], ip[40:]
        else:
            continue
        if proto == 17:
            sport, dport = struct.unpack('!HH', l4[:4])
            payload, transport = l4[8:], 'udp'
        elif proto == 6:
            sport, dport = struct.unpack('!HH', l4[:4])
            payload, transport = l4[(l4[12] >> 4) * 4:], 'tcp'
        else:
            continue
        if proto == 17 and dport == 9:
            out.append('marker')
            continue
        if 53 not in (sport, dport) or not payload:
            continue
        out.append({'transport': transport, 'direction': 'answer' if sport == 53 else 'query', 'hex': payload.hex()})


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--sniff':
        sniff(sys.argv[2])
    else:
        main()
