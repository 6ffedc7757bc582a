#!/usr/bin/env python3
"""One server process listening twice, plain HTTP and HTTPS (the system libssl through
Python's ssl module), serving the same responses on both: causeway's TLS plaintext tests and
bench (docs/INFERENCE.md "TLS").

  tls_server.py --mode threaded|asyncio --plain-port P --tls-port T --cert C --key K --ready-file F

threaded: a thread per connection on blocking ssl.SSLSocket (SSL_set_fd: OpenSSL reads the
socket itself). asyncio: asyncio.start_server(ssl=...), whose SSL objects use memory BIOs (the
event loop reads the socket and feeds them).
Keep-alive HTTP/1.1; GET /plain?n=N: N bytes with Content-Length; GET /stream?events=E: a
chunked text/event-stream of E `data:` events (each its own write, delay_ms apart, default
2) and `data: [DONE]`; POST /v1/chat/completions (a JSON body with "model" and "stream": true):
an OpenAI-shaped stream of 3 content deltas and a final event with "usage" (prompt_tokens 7,
completion_tokens 3), each its own write, then `data: [DONE]`."""
import argparse
import asyncio
import json
import socket
import ssl
import threading
import time
import urllib.parse


def chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


def parse_head(head):
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    _method, target, _version = line.split(" ", 2)
    url = urllib.parse.urlsplit(target)
    return url.path, dict(urllib.parse.parse_qsl(url.query))


def body_length(head):
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def chat_writes(body):
    model = json.loads(body or b"{}").get("model", "")
    out = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"]
    for i in range(3):
        ev = {"id": "c1", "object": "chat.completion.chunk", "model": model,
              "choices": [{"index": 0, "delta": {"content": "tok%d " % i}, "finish_reason": None}]}
        out.append(chunk(b"data: " + json.dumps(ev).encode() + b"\n\n"))
    last = {"id": "c1", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
    out.append(chunk(b"data: " + json.dumps(last).encode() + b"\n\n"))
    out.append(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    return out


def response_writes(head, body=b""):
    """The writes answering one request (its head and body), in order (bytes, or a pause in
    seconds)."""
    path, q = parse_head(head)
    if path == "/v1/chat/completions":
        return chat_writes(body)
    if path == "/plain":
        body = b"x" * int(q.get("n", "200"))
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body]
    if path == "/stream":
        out = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"]
        delay = float(q.get("delay_ms", "2")) / 1000
        for i in range(int(q.get("events", "5"))):
            out += [delay, chunk(b'data: {"token": %d}\n\n' % i)]
        out += [chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"]
        return out
    body = b"not found\n"
    return [b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n" % len(body) + body]


def serve_threaded(listener):
    def one(conn):
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    more = conn.recv(65536)
                    if not more:
                        return
                    buf += more
                head, _, buf = buf.partition(b"\r\n\r\n")
                n = body_length(head)
                while len(buf) < n:
                    more = conn.recv(65536)
                    if not more:
                        return
                    buf += more
                body, buf = buf[:n], buf[n:]
                for w in response_writes(head, body):
                    if isinstance(w, float):
                        if w > 0:
                            time.sleep(w)
                    else:
                        conn.sendall(w)

    while True:
        try:
            conn, _ = listener.accept()
        except (OSError, ssl.SSLError):
            continue
        threading.Thread(target=one, args=(conn,), daemon=True).start()


async def serve_conn(reader, writer):
    try:
        while True:
            head = (await reader.readuntil(b"\r\n\r\n"))[:-4]
            n = body_length(head)
            body = await reader.readexactly(n) if n else b""
            for w in response_writes(head, body):
                if isinstance(w, float):
                    if w > 0:
                        await asyncio.sleep(w)
                else:
                    writer.write(w)
                    await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


def listen(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it: no Nagle wait between writes
    s.bind(("127.0.0.1", port))
    s.listen(1024)  # the concurrent-connections test opens hundreds at once
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["threaded", "asyncio"], required=True)
    ap.add_argument("--plain-port", type=int, required=True)
    ap.add_argument("--tls-port", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ready-file", required=True)
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    plain, tls = listen(a.plain_port), listen(a.tls_port)
    if a.mode == "threaded":
        threading.Thread(target=serve_threaded, args=(plain,), daemon=True).start()
        threading.Thread(target=serve_threaded, args=(ctx.wrap_socket(tls, server_side=True),), daemon=True).start()
        open(a.ready_file, "w").close()
        threading.Event().wait()
    else:
        async def run():
            await asyncio.start_server(serve_conn, sock=plain)
            await asyncio.start_server(serve_conn, sock=tls, ssl=ctx)
            open(a.ready_file, "w").close()
            await asyncio.Event().wait()

        asyncio.run(run())


if __name__ == "__main__":
    main()
