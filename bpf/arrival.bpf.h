/* When the kernel received the bytes a serving process reads (docs/INFERENCE.md "Arrival
 * time"): a request can sit in the socket's receive queue while the server's event loop is
 * busy, and the read time alone hides that wait from TTFT and E2E.
 *
 * The hook: the raw tracepoint tcp:tcp_probe, which tcp_rcv_established runs for every
 * segment an established TCP socket receives (loopback included), with the socket and the
 * skb. Every TCP segment of the host pays its filter: one read of the socket's local port and
 * one bit of cw_listen_port_bits (a port some traced server listens on, set by the collector
 * beside sock_listen); only then the network namespace is read and sock_listen is looked up.
 * For a segment carrying data to a served port, its sequence range and the time are kept in
 * a small ring per socket (sock_arrival). At a read on a traced connection (bpf/sock.bpf.h
 * sock_exit) the socket's copied_seq says which bytes the read took ([copied_seq - ret,
 * copied_seq)); the ring gives when the segments holding the first and the last of them
 * arrived.
 *
 * Limits (docs/INFERENCE.md "Arrival time"): a segment that arrives while the server's own
 * thread holds the socket lock (inside a syscall on that socket) is processed from the
 * backlog at release_sock, and is stamped then; data carried by the handshake's last ACK or
 * a SYN (TCP Fast Open) goes through tcp_rcv_state_process, not tcp_probe: its read is not
 * given an arrival (the read time stands). Data that arrives before accept() is stamped: the
 * child socket is established and its local port is the listener's. */
#pragma once

#include "maps.bpf.h"

/* A port some traced server listens on, in any namespace: bit (port & 63) of word port >> 6.
 * Written by the collector (collector/bpf_loader.cpp add_listen_port) with sock_listen. */
__u64 cw_listen_port_bits[1024] = {};

#define CW_ARRIVAL_SEGS 8 /* a request head and body in 1-2 segments on loopback; 8 ride out a few */

/* The last CW_ARRIVAL_SEGS data segments a served socket received: [start, end) in sequence
 * space and the time. Written under the socket's lock (softirq or release_sock), read at the
 * server's read without it: a torn entry gives no match or a neighbour's time. */
struct cw_arrival {
  __u64 ts[CW_ARRIVAL_SEGS];
  __u32 start[CW_ARRIVAL_SEGS];
  __u32 end[CW_ARRIVAL_SEGS];
  __u32 next;
  __u32 _pad;
};

/* sk → its last segments. LRU: a socket closed unseen is evicted in time; a new socket at a
 * freed socket's address matches the old entries only if a read's bytes fall in their
 * sequence ranges (random ISNs make that ~segment/2^32). 16384 × ~200 B ≈ 3.2 MiB. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct cw_arrival);
} sock_arrival SEC(".maps");

static __always_inline bool arrival_port_served(__u16 port) {
  return (cw_listen_port_bits[(port >> 6) & 1023] >> (port & 63)) & 1;
}

/* raw_tp/tcp_probe(struct sock *sk, struct sk_buff *skb), at the top of tcp_rcv_established:
 * skb->data is the TCP header, skb->len counts it. */
SEC("raw_tp/tcp_probe")
int cw_tcp_arrival(struct bpf_raw_tracepoint_args *ctx) {
  struct sock *sk = (struct sock *)ctx->args[0];
  const __u16 port = BPF_CORE_READ(sk, __sk_common.skc_num);
  if (!arrival_port_served(port) || cw_stopped) return 0;
  struct cw_listen_key lk = {.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum), .port = port};
  if (!bpf_map_lookup_elem(&sock_listen, &lk)) return 0;
  const struct sk_buff *skb = (const struct sk_buff *)ctx->args[1];
  struct tcphdr th;
  if (bpf_probe_read_kernel(&th, sizeof(th), BPF_CORE_READ(skb, data)) != 0) return 0;
  const __u32 hl = (__u32)th.doff * 4;
  const __u32 len = BPF_CORE_READ(skb, len);
  if (len <= hl) return 0; /* an ACK without data */
  const __u64 now = bpf_ktime_get_ns();
  const __u64 key = (__u64)sk;
  struct cw_arrival *a = bpf_map_lookup_elem(&sock_arrival, &key);
  if (!a) {
    static const struct cw_arrival empty = {};
    bpf_map_update_elem(&sock_arrival, &key, &empty, BPF_NOEXIST);
    a = bpf_map_lookup_elem(&sock_arrival, &key);
    if (!a) return 0;
  }
  const __u32 i = a->next & (CW_ARRIVAL_SEGS - 1);
  const __u32 seq = __builtin_bswap32(th.seq);
  a->start[i] = seq;
  a->end[i] = seq + (len - hl);
  a->ts[i] = now;
  a->next = i + 1;
  return 0;
}

/* When the segment holding sequence number b arrived: the oldest kept segment holding it (a
 * retransmitted copy comes later); 0 when none does. Oldest first and the first match
 * returns, so the verifier walks 8 straight steps, not every combination of matches. */
static __always_inline __u64 arrival_of_byte(const struct cw_arrival *a, __u32 b) {
  const __u32 next = a->next;
#pragma unroll
  for (int k = 0; k < CW_ARRIVAL_SEGS; k++) {
    const __u32 i = (next + k) & (CW_ARRIVAL_SEGS - 1);
    if (a->ts[i] && (__s32)(b - a->start[i]) >= 0 && (__s32)(a->end[i] - b) > 0) return a->ts[i];
  }
  return 0;
}

/* µs before `at`, rounded up (at least 1); 0 when unknown. */
static __always_inline __u32 arrival_us_before(__u64 t, __u64 at) {
  if (!t) return 0;
  if (t >= at) return 1;
  const __u64 us = (at - t + 999) / 1000;
  return us > 0xffffffffULL ? 0xffffffffU : (__u32)us;
}

/* The bytes [copied_seq - n, copied_seq) the TCP socket sk handed out last (before `at`):
 * when their first and last arrived, in µs before `at` (0 unknown). */
static __always_inline void arrival_of_read(struct sock *sk, __s64 n, __u64 at, __u32 *first_us, __u32 *last_us) {
  *first_us = *last_us = 0;
  if (!sk || n <= 0) return;
  const __u64 key = (__u64)sk;
  const struct cw_arrival *a = bpf_map_lookup_elem(&sock_arrival, &key);
  if (!a) return;
  const __u32 copied = BPF_CORE_READ((struct tcp_sock *)sk, copied_seq);
  *first_us = arrival_us_before(arrival_of_byte(a, copied - (__u32)n), at);
  *last_us = arrival_us_before(arrival_of_byte(a, copied - 1), at);
}

/* The same for the bytes handed out since sequence number `from` (TLS: several cipher reads
 * before one plaintext read, bpf/ssl.bpf.h ssl_read_arrival). */
static __always_inline void arrival_since(struct sock *sk, __u32 from, __u64 at, __u32 *first_us, __u32 *last_us) {
  *first_us = *last_us = 0;
  if (!sk) return;
  const __u32 copied = BPF_CORE_READ((struct tcp_sock *)sk, copied_seq);
  const __s32 n = (__s32)(copied - from);
  if (n > 0) arrival_of_read(sk, n, at, first_us, last_us);
}

/* The socket is gone from the server (its close): its segments are no longer needed. */
static __always_inline void arrival_forget(struct sock *sk) {
  if (!sk) return;
  const __u64 key = (__u64)sk;
  bpf_map_delete_elem(&sock_arrival, &key);
}
