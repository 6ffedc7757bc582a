#!/usr/bin/env python3
"""Client of tls_server.py: the same requests over plain HTTP and over HTTPS, on keep-alive
connections, each response read whole (causeway's TLS tests, docs/INFERENCE.md "TLS").

  tls_client.py --port P [--tls] --connections C --rounds R [--events E]

Each connection sends R rounds of GET /plain and GET /stream?events=E. Prints one JSON line:
{"requests": N, "events": total data: events seen (without [DONE])}. Exits 1 on any error."""
import argparse
import http.client
import json
import ssl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=5)
    ap.add_argument("--warm", action="store_true", help="one GET /warm (404) on one connection, nothing else")
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the test's own throwaway certificate
    n = events = 0
    for _ in range(a.connections):
        c = (http.client.HTTPSConnection("127.0.0.1", a.port, context=ctx, timeout=20) if a.tls
             else http.client.HTTPConnection("127.0.0.1", a.port, timeout=20))
        if a.warm:
            c.request("GET", "/warm")
            c.getresponse().read()
            c.close()
            print(json.dumps({"requests": 1, "events": 0}))
            return
        for _ in range(a.rounds):
            for target in ("/plain?n=300", "/stream?events=%d" % a.events):
                c.request("GET", target)
                r = c.getresponse()
                body = r.read()
                if r.status != 200:
                    raise SystemExit("status %d for %s" % (r.status, target))
                events += sum(1 for line in body.split(b"\n") if line.startswith(b"data: {"))
                n += 1
        c.close()
    print(json.dumps({"requests": n, "events": events}))


if __name__ == "__main__":
    main()
