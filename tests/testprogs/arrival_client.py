#!/usr/bin/env python3
"""A streaming client that times itself from the kernel (tests/bpf/test_requests_arrival_bpf.cpp):
--workers processes, each with one keep-alive connection, send --requests in all. Worker 0
times --timed of them into the server's bursts (tests/testprogs/busy_api_server.py): it asks
for a burst on a second connection (POST /burn), reads the burst's start from the response
head that leaves before the spin, and sends its request at once; a request sent with less than
--left-ms of the burst certainly left (its start + --burst-ms, the spin's shortest end) is not
counted as timed, and another is timed instead, so every run has exactly --timed requests
that arrived while the event loop spun. The other workers send theirs --gap-ms apart, landing
in a burst only by chance. Per request: the send's start and end (CLOCK_REALTIME ns around sendall: on loopback the kernel
delivers the bytes to the server's socket inside it) and the kernel's receive time of the first
SSE data event (SO_TIMESTAMPNS ancillary data of the recvmsg that returned it: CLOCK_REALTIME,
the trace's Unix time). TTFT = first token received - send end. One JSON line per request.
With --tls the connection speaks TLS through an ssl.SSLObject on memory BIOs over the plain
socket, so every ciphertext read is still a recvmsg with its kernel receive time: the first
token's time is that of the read that completed its TLS record."""
import argparse
import json
import multiprocessing
import os
import socket
import ssl
import struct
import time

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--requests", type=int, default=60)
p.add_argument("--workers", type=int, default=4)
p.add_argument("--tokens", type=int, default=4)
p.add_argument("--gap-ms", type=float, default=7)
p.add_argument("--timed", type=int, default=16)
p.add_argument("--burst-ms", type=float, default=60)  # the server's --burst-ms
p.add_argument("--left-ms", type=float, default=20)
p.add_argument("--timed-gap-ms", type=float, default=60)
p.add_argument("--out", required=True)
p.add_argument("--tls", action="store_true")
ARGS = p.parse_args()

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def kernel_rx(anc):
    """The SO_TIMESTAMPNS receive time of a recvmsg's ancillary data, 0 without one."""
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", raw[:16])
            return sec * 1_000_000_000 + nsec
    return 0


class PlainConn:
    def __init__(self, sock):
        self.sock = sock

    def sendall(self, data):
        self.sock.sendall(data)

    def recvmsg(self, n):
        data, anc, _, _ = self.sock.recvmsg(n, socket.CMSG_SPACE(16))
        return data, kernel_rx(anc)


class TlsConn:
    """TLS over the plain socket through memory BIOs: ciphertext moves with sendall and
    recvmsg (so reads keep their kernel receive times), the SSLObject turns it to plaintext."""

    def __init__(self, sock):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the test's own throwaway certificate
        self.sock, self.incoming, self.outgoing = sock, ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.incoming, self.outgoing)
        self.rx = 0
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                self.feed(65536)
        self.flush()

    def flush(self):
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def feed(self, n):
        data, anc, _, _ = self.sock.recvmsg(n, socket.CMSG_SPACE(16))
        if not data:
            raise ConnectionError("server closed")
        self.incoming.write(data)
        return kernel_rx(anc)

    def sendall(self, data):
        self.tls.write(data)
        self.flush()

    def recvmsg(self, n):
        """Plaintext, and the receive time of the last ciphertext read: the one that completed
        the newest TLS record (the server writes each event as a record of its own)."""
        while True:
            try:
                return self.tls.read(n), self.rx
            except ssl.SSLWantReadError:
                self.rx = self.feed(n)


def one(conn, rid):
    body = json.dumps({"model": "m", "prompt": "hello", "max_tokens": ARGS.tokens, "stream": True}).encode()
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: " + rid.encode() +
           b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    send_start = time.time_ns()
    conn.sendall(req)
    send_end = time.time_ns()
    buf, first_rx, events, kernel_ts = b"", 0, 0, True
    while not (b"data: [DONE]" in buf and buf.endswith(b"\r\n0\r\n\r\n")):
        # Small reads until the first event: a read's stamp is its last segment's, and a
        # client scheduled late on a busy host finds several events queued.
        data, rx = conn.recvmsg(48 if not first_rx else 65536)
        returned = time.time_ns()
        if not data:
            raise ConnectionError("server closed")
        buf += data
        n = buf.count(b"data: ") - buf.count(b"data: [DONE]")
        if n > 0 and not first_rx:
            # A segment without a stamp (timestamping was switched on after it was received)
            # or one stamped before the request was sent: the client's own time instead.
            kernel_ts = send_end <= rx <= returned
            first_rx = rx if kernel_ts else returned
        events = n
    return {"request_id": rid, "send_start_ns": send_start, "send_end_ns": send_end, "first_token_rx_ns": first_rx,
            "ttft_ns": first_rx - send_end, "events": events, "kernel_ts": kernel_ts}


def connect():
    raw = socket.create_connection(("127.0.0.1", ARGS.port))
    raw.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return raw, (TlsConn(raw) if ARGS.tls else PlainConn(raw))


def worker(w, n, q):
    raw, conn = connect()
    out = []
    for i in range(n):
        out.append(one(conn, "arr-%d-%d-%d" % (os.getpid(), w, i)))
        time.sleep(ARGS.gap_ms / 1000)
    raw.close()
    q.put(out)


def ask_burst(ctrl, rid):
    """POST /burn: the server's loop spins from the start its response head carries (sent
    before the spin). Returns that start and how many body bytes came with the head."""
    ctrl.sendall(b"POST /burn HTTP/1.1\r\nHost: x\r\nx-request-id: " + rid.encode() + b"\r\nContent-Length: 0\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        data, _ = ctrl.recvmsg(4096)
        if not data:
            raise ConnectionError("server closed")
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-burst-from-ns":
            return int(value), len(rest)
    raise ValueError("the /burn response has no x-burst-from-ns")


def end_burst(ctrl, have):
    """The burst's 2-byte body ("ok"), written when the spin ended."""
    while have < 2:
        data, _ = ctrl.recvmsg(2 - have)
        if not data:
            raise ConnectionError("server closed")
        have += len(data)


def timed_worker(n, q):
    raw, conn = connect()
    ctrl_raw, ctrl = connect()
    out, timed, asked = [], 0, 0
    while timed < n:
        asked += 1
        if asked > 4 * n:
            raise SystemExit("arrival_client: %d bursts asked, only %d requests sent inside one" % (asked, timed))
        start, have = ask_burst(ctrl, "burn-%d-%d" % (os.getpid(), asked))
        # Too late to send with --left-ms to spare (the client woke late): let it pass.
        if time.time_ns() - start > (ARGS.burst_ms - ARGS.left_ms - 5) * 1e6:
            end_burst(ctrl, have)
            continue
        r = one(conn, "arr-%d-0-%d" % (os.getpid(), len(out)))
        # Timed only if the request had arrived (inside sendall, before send_end) with
        # --left-ms or more of the spin certainly left; a sendall preempted past that is an
        # ordinary request, and the next burst is asked for.
        r["burst_from_ns"] = start
        r["timed"] = start + ARGS.burst_ms * 1e6 - r["send_end_ns"] >= ARGS.left_ms * 1e6
        timed += r["timed"]
        out.append(r)
        end_burst(ctrl, have)
        time.sleep(ARGS.timed_gap_ms / 1000)
    ctrl_raw.close()
    raw.close()
    q.put(out)


if __name__ == "__main__":
    # Receive timestamps are switched on host-wide some time after the first socket asks for
    # them (a deferred static key) and off when the last one closes: one held open here for the
    # whole run, asked for before the first request.
    keep = socket.socket()
    keep.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    time.sleep(0.5)
    q = multiprocessing.Queue()
    rest = ARGS.requests - ARGS.timed
    others = ARGS.workers - 1
    per = [rest // others + (1 if w < rest % others else 0) for w in range(others)]
    procs = [multiprocessing.Process(target=timed_worker, args=(ARGS.timed, q))]
    procs += [multiprocessing.Process(target=worker, args=(w + 1, per[w], q)) for w in range(others)]
    for pr in procs:
        pr.start()
    results = [r for _ in procs for r in q.get()]
    for pr in procs:
        pr.join()
    with open(ARGS.out, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
