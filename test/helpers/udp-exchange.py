"""UDP request/answer peer for test/kernel/nfqueue.test.ts, over JSON lines on stdin/stdout.

  {"id", "op": "serve", "port"}                   answer every datagram to that port with "re:" + its text
  {"id", "op": "served"}                          → {"id", "texts"}: what the served ports received
  {"id", "op": "send-from", "from", "ip", "port", "text"}  send text from a served port's socket (unsolicited)
  {"id", "op": "ask", "ip", "port", "text"}       send text from this peer's one client socket
  {"id", "op": "received"}                        → {"id", "texts"}: what the client socket received so far
The first line out is {"ready": true}.
"""
import json, socket, sys, threading

client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
client.bind(("0.0.0.0", 0))
servers = {}
received, served = [], []
lock = threading.Lock()


def out(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def read_client():
    while True:
        data, _ = client.recvfrom(65535)
        with lock:
            received.append(data.decode(errors="replace"))


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    servers[port] = s

    def loop():
        while True:
            data, addr = s.recvfrom(65535)
            with lock:
                served.append(data.decode(errors="replace"))
            s.sendto(b"re:" + data, addr)

    threading.Thread(target=loop, daemon=True).start()


threading.Thread(target=read_client, daemon=True).start()
out({"ready": True})
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "serve":
        serve(req["port"])
        out({"id": req["id"]})
    elif op == "send-from":
        servers[req["from"]].sendto(req["text"].encode(), (req["ip"], req["port"]))
        out({"id": req["id"]})
    elif op == "ask":
        client.sendto(req["text"].encode(), (req["ip"], req["port"]))
        out({"id": req["id"]})
    elif op in ("received", "served"):
        with lock:
            texts = list(received if op == "received" else served)
        out({"id": req["id"], "texts": texts})
    else:
        out({"id": req["id"], "error": f"unknown op {op}"})
