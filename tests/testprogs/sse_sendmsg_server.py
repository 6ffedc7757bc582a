#!/usr/bin/env python3
"""A streaming server that sends each response's events with one sendmsg of several iovecs,
as a server on CPython 3.12+ asyncio or libuv (uvloop) flushes what piled up while the client
was slow: causeway's live request tests (docs/INFERENCE.md "Capture limits").

  sse_sendmsg_server.py --port P --ready-file F

Each keep-alive request (POST with Content-Length) gets a chunked text/event-stream response:
the head in one send, then one sendmsg of IOVECS iovecs, each holding EVENTS_PER_IOVEC chunks
of one `data:` event of about EVENT_BYTES bytes, then `data: [DONE]` and the last chunk in
one send. Plain sockets, one thread per connection."""
import argparse
import json
import select
import socket
import threading

IOVECS = 8  # as many as causeway reads (bpf/sock.bpf.h CW_SOCK_MAX_IOV)
EVENTS_PER_IOVEC = 4
EVENT_BYTES = 1200


def chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


def serve(conn):
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                more = conn.recv(65536)
                if not more:
                    return
                buf += more
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(buf) < length:
                more = conn.recv(65536)
                if not more:
                    return
                buf += more
            buf = buf[length:]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            iovecs, i = [], 0
            for _ in range(IOVECS):
                part = b""
                for _ in range(EVENTS_PER_IOVEC):
                    text = " tok%d" % i + "x" * (EVENT_BYTES - 120)
                    part += chunk(b"data: " + json.dumps({"choices": [{"index": 0, "text": text}]}).encode() + b"\n\n")
                    i += 1
                iovecs.append(part)
            total = sum(len(p) for p in iovecs)
            sent = conn.sendmsg(iovecs)
            if sent < total:  # the rest of a short sendmsg, as one buffer
                conn.sendall(b"".join(iovecs)[sent:])
            conn.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ready-file", required=True)
    a = p.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", a.port))
    s.listen(64)
    with open(a.ready_file, "w") as f:
        f.write("ready\n")
    s.setblocking(False)
    while True:
        # accept only once a connection waits, as event-loop servers do: an accept blocked
        # since before the tracer started would go unseen (its entry was not traced)
        select.select([s], [], [])
        try:
            conn, _ = s.accept()
        except BlockingIOError:
            continue
        conn.setblocking(True)
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
