#!/usr/bin/env python3
"""Client of tls_server.py: the same requests over plain HTTP and over HTTPS, on keep-alive
connections, each response read whole (causeway's TLS tests, docs/INFERENCE.md "TLS").

  tls_client.py --port P [--tls] --connections C --rounds R [--events E] [--chat] [--concurrent]

Each connection sends R rounds of GET /plain and GET /stream?events=E, and with --chat an
OpenAI-shaped POST /v1/chat/completions (model "cw-tls-model", max_tokens 16, streamed). By default one
connection after another; --concurrent opens all C connections first (hundreds of TLS
connections held at once) and sends each round's request on every one of them before
reading any answer. Prints one JSON line: {"requests": N, "events": total data: events seen
(without [DONE]), "peers": each connection's own address "ip:port" as the server sees it as
its peer}. Exits 1 on any error."""
import argparse
import http.client
import json
import ssl

CHAT_BODY = json.dumps({"model": "cw-tls-model", "stream": True, "max_tokens": 16,
                        "messages": [{"role": "user", "content": "hello over tls"}]})


def targets(events, chat):
    out = [("GET", "/plain?n=300", None), ("GET", "/stream?events=%d" % events, None)]
    return out + [("POST", "/v1/chat/completions", CHAT_BODY)] if chat else out


def send(c, method, target, body):
    headers = {"Content-Type": "application/json"} if body else {}
    c.request(method, target, body=body, headers=headers)


def read(c, target):
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit("status %d for %s" % (r.status, target))
    return sum(1 for line in body.split(b"\n") if line.startswith(b"data: {"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=5)
    ap.add_argument("--chat", action="store_true")
    ap.add_argument("--concurrent", action="store_true")
    ap.add_argument("--warm", action="store_true", help="one GET /warm (404) on one connection, nothing else")
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the test's own throwaway certificate
    peers = []

    def connect():
        c = (http.client.HTTPSConnection("127.0.0.1", a.port, context=ctx, timeout=60) if a.tls
             else http.client.HTTPConnection("127.0.0.1", a.port, timeout=60))
        c.connect()
        host, port = c.sock.getsockname()[:2]
        peers.append("%s:%d" % (host, port))
        return c

    if a.warm:
        c = connect()
        c.request("GET", "/warm")
        c.getresponse().read()
        c.close()
        print(json.dumps({"requests": 1, "events": 0, "peers": peers}))
        return
    n = events = 0
    if a.concurrent:
        conns = [connect() for _ in range(a.connections)]
        for _ in range(a.rounds):
            for method, target, body in targets(a.events, a.chat):
                for c in conns:
                    send(c, method, target, body)
                for c in conns:
                    events += read(c, target)
                    n += 1
        for c in conns:
            c.close()
    else:
        for _ in range(a.connections):
            c = connect()
            for _ in range(a.rounds):
                for method, target, body in targets(a.events, a.chat):
                    send(c, method, target, body)
                    events += read(c, target)
                    n += 1
            c.close()
    print(json.dumps({"requests": n, "events": events, "peers": sorted(peers)}))


if __name__ == "__main__":
    main()
