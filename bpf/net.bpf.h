/* TCP retransmissions (every socket: NCCL over TCP and the noisy neighbour alike), attributed
 * to the process that owns the socket rather than to whatever task the retransmit timer or
 * the incoming ACK interrupted. */
#pragma once

#include "maps.bpf.h"

#define CW_AF_INET 2
#define CW_AF_INET6 10

/* Who last acted on a socket in process context. */
struct cw_sock_owner {
  __u32 pid; /* tgid */
  __u32 tid;
  __u64 cgroup_id;
};

/* Socket → its owner, for sockets of traced processes only. Filled where the kernel runs in
 * the owner's context: a send (tcp_sendmsg_locked: data, the only thing retransmitted besides
 * SYN/FIN) and connect() (CLOSE → SYN_SENT: the SYN, retransmitted before any data). Removed
 * when the socket reaches CLOSE, so a socket freed and reused for another connection never
 * inherits the old owner. 16384 sockets cover 8 NCCL ranks × 15 peers × 64 sockets; past that
 * the least recently used is evicted and its retransmits are attributed to the current task,
 * flag clear. Preallocated: 16384 × (48 B element header + 8 B key + 16 B value) + 16384 ×
 * 16 B buckets ≈ 1.4 MiB. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct cw_sock_owner);
} sk_owner SEC(".maps");

/* Called on every send of every process: one lookup in `traced` for the others; for a traced
 * sender one more lookup, and a write only when the owner changed. */
static __always_inline void note_owner(const struct sock *sk) {
  if (cw_stopped) return;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (!is_traced(tgid)) return;
  __u64 key = (__u64)sk;
  struct cw_sock_owner *o = bpf_map_lookup_elem(&sk_owner, &key);
  if (o && o->tid == (__u32)id && o->pid == tgid) return;
  struct cw_sock_owner v = {.pid = tgid, .tid = (__u32)id, .cgroup_id = bpf_get_current_cgroup_id()};
  bpf_map_update_elem(&sk_owner, &key, &v, BPF_ANY); /* LRU: evicts rather than fails */
}

/* raw_tp/tcp_sendmsg_locked(const struct sock *sk, const struct msghdr *msg,
 *                           const struct sk_buff *skb, int size_goal): once per chunk copied,
 * in the sender's context (kernel senders run in kworkers, which are never traced). */
SEC("raw_tp/tcp_sendmsg_locked")
int cw_tcp_sendmsg(struct bpf_raw_tracepoint_args *ctx) {
  note_owner((const struct sock *)ctx->args[0]);
  return 0;
}

/* A listener is news for discovery: servers are found when they listen, not by rescanning
 * every process's sockets (docs/COLLECTOR.md "Discovery and lifecycle"). A few a second at
 * most on any host: every listen is sent, the collector filters. */
static __always_inline void tell_listen(const struct sock *sk) {
  if (cw_stopped) return;
  struct cw_listen_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), 0, CW_REC_LISTEN, CW_SRC_NET);
  e->port = BPF_CORE_READ(sk, __sk_common.skc_num);
  e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
  e->_pad1 = 0;
  bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); /* rare; discovery wants it soon */
}

/* raw_tp/inet_sock_set_state(const struct sock *sk, int oldstate, int newstate). SYN_SENT is
 * entered inside connect() and LISTEN inside listen(), in the caller's context; other
 * transitions may run in softirq. */
SEC("raw_tp/inet_sock_set_state")
int cw_sock_state(struct bpf_raw_tracepoint_args *ctx) {
  const struct sock *sk = (const struct sock *)ctx->args[0];
  int newstate = (int)ctx->args[2];
  if (newstate == TCP_LISTEN) {
    tell_listen(sk);
  } else if (newstate == TCP_SYN_SENT) {
    note_owner(sk);
  } else if (newstate == TCP_CLOSE) {
    __u64 key = (__u64)sk;
    bpf_map_delete_elem(&sk_owner, &key);
  }
  return 0;
}

static __always_inline __s64 be64_of(const __u32 *w) {
  return (__s64)(((__u64)__builtin_bswap32(w[0]) << 32) | __builtin_bswap32(w[1]));
}

/* raw_tp/tcp_retransmit_skb(const struct sock *sk, const struct sk_buff *skb, int err)
 * Addresses are host-order integers (10.0.3.11 = 0x0a00030b); an IPv6 address is two of them,
 * its first and last 8 bytes. tracedb/op_catalog.cpp names the args of both ops. */
SEC("raw_tp/tcp_retransmit_skb")
int cw_tcp_retransmit(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  struct sock *sk = (struct sock *)ctx->args[0];
  struct in6_addr saddr6 = {}, daddr6 = {};
  bool v6 = BPF_CORE_READ(sk, __sk_common.skc_family) == CW_AF_INET6;
  if (v6) {
    BPF_CORE_READ_INTO(&daddr6, sk, __sk_common.skc_v6_daddr);
    BPF_CORE_READ_INTO(&saddr6, sk, __sk_common.skc_v6_rcv_saddr);
    /* ::ffff:a.b.c.d: an IPv6 socket talking IPv4, which skc_daddr holds too. */
    const __u32 *d = daddr6.in6_u.u6_addr32;
    if (d[0] == 0 && d[1] == 0 && d[2] == __builtin_bswap32(0xffff)) v6 = false;
  }
  struct cw_host_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), v6 ? CW_OP_TCP_RETRANSMIT6 : CW_OP_TCP_RETRANSMIT, CW_REC_HOST, CW_SRC_NET);
  __u64 key = (__u64)sk;
  struct cw_sock_owner *o = bpf_map_lookup_elem(&sk_owner, &key);
  if (o) {
    e->hdr.pid = o->pid;
    e->hdr.tid = o->tid;
    e->hdr.cgroup_id = o->cgroup_id;
    e->hdr.flags |= CW_F_SOCK_OWNER;
  }
  e->dur_ns = 0;
  __u16 sport = BPF_CORE_READ(sk, __sk_common.skc_num);
  __u16 dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
  __u8 state = BPF_CORE_READ(sk, __sk_common.skc_state);
  if (v6) {
    e->a[0] = be64_of(saddr6.in6_u.u6_addr32);
    e->a[1] = be64_of(saddr6.in6_u.u6_addr32 + 2);
    e->a[2] = be64_of(daddr6.in6_u.u6_addr32);
    e->a[3] = be64_of(daddr6.in6_u.u6_addr32 + 2);
    e->a[4] = sport | (__s64)dport << 16 | (__s64)state << 32;
  } else {
    e->a[0] = __builtin_bswap32(BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr));
    e->a[1] = sport;
    e->a[2] = __builtin_bswap32(BPF_CORE_READ(sk, __sk_common.skc_daddr));
    e->a[3] = dport;
    e->a[4] = state;
  }
  e->a[5] = 0; /* the collector's decoder stores CW_F_SOCK_OWNER here */
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}
