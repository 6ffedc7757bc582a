"""Failed exchanges, each of a known kind, for the live error tests (tests/bpf/test_requests_node_bpf.cpp).

On fresh connections, each request with its x-request-id and the tenant given:
  GET /missing      → 404 (error)
  GET /boom         → 500 (error)
  GET /abort        → the server closes mid-stream without the final chunk (aborted)
  GET /slow-stream  → this client reads two SSE events and closes (disconnected)
Writes one JSON line per request: its id, path, the kind expected and what the client saw.
Usage: python3 errors_client.py --port P --tenant T --each N --out FILE
"""
import argparse
import json
import socket


def exchange(port, path, rid, tenant, leave_after_events=None):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {rid}\r\nx-tenant: {tenant}\r\n\r\n".encode())
    raw = b""
    while True:
        part = s.recv(65536)
        if not part:
            break
        raw += part
        if leave_after_events is not None and raw.count(b"data: ") >= leave_after_events:
            break
        if leave_after_events is None and b"\r\n\r\n" in raw and not path.startswith("/abort"):
            head, _, body = raw.partition(b"\r\n\r\n")
            length = [int(l.split(b":")[1]) for l in head.lower().split(b"\r\n") if l.startswith(b"content-length:")]
            if length and len(body) >= length[0]:
                break
            if not length and body.endswith(b"0\r\n\r\n"):
                break
    s.close()
    status = int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.") else 0
    return status, raw


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tenant", default="tenant-errors")
    p.add_argument("--each", type=int, default=2)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    plan = [("/missing", "error", None), ("/boom", "error", None), ("/abort", "aborted", None),
            ("/slow-stream", "disconnected", 2)]
    with open(a.out, "w") as f:
        for path, kind, leave in plan:
            for i in range(a.each):
                rid = f"{kind}-{path.strip('/')}-{i}"
                status, raw = exchange(a.port, path, rid, a.tenant, leave)
                f.write(json.dumps({"request_id": rid, "path": path, "kind": kind, "status": status,
                                    "final_chunk": raw.endswith(b"0\r\n\r\n")}) + "\n")


if __name__ == "__main__":
    main()
