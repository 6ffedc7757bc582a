/* Socket syscalls of serving processes: accept, reads, writes and close of the connections
 * they accept, with a bounded copy of each buffer, for the HTTP reassembly in user space
 * (requests/, docs/INFERENCE.md). Pixie's socket tracer has this shape; we filter harder:
 * only processes the collector put in `sock_pids`, and of those only the server side of TCP
 * connections they accepted (seen accepted, or found at a read or write with a local port
 * they listen on: accepted before the trace), so no buffer of an unrelated fd or process is
 * ever copied. A connection's peer and namespace come from the kernel socket, not from the
 * accept's sockaddr (libuv and Go pass NULL), and causeway's own scrapes, and those of any
 * other causeway tracer on the host, are left out by their exact 4-tuple (own_conns,
 * tracer_conns).
 *
 * Three hooks run the same logic (sock_enter / sock_exit; docs/INFERENCE.md "Which hook");
 * the collector picks one per server (collector/bpf_loader.cpp, collector/sock_hook.h):
 * - libc, where a uprobe trap is cheap (the collector times one): uprobes and uretprobes on
 *   the server's own libc socket functions (cw_sock_libc_*), attached with the server's pid,
 *   so the kernel writes their breakpoints into that process's memory only: another
 *   process's read or write runs nothing at all. Misses what bypasses those functions
 *   (direct syscalls, io_uring, static binaries).
 * - syscall tracepoints syscalls:sys_enter_<name> / sys_exit_<name> of the socket syscalls
 *   only (cw_sock_sys_*), where traps are dear and for servers without a dynamically linked
 *   libc: an untraced process's read or write pays the tracepoint and the tgid filter. Needs
 *   CONFIG_FTRACE_SYSCALLS and tracefs.
 * - the fallback, raw tracepoints sys_enter / sys_exit (no tracefs needed; cw_sock_enter /
 *   cw_sock_exit): every syscall of every process runs the tgid filter once attached.
 * `sock_pids` says which hook serves each server, so a server on the libc hook is not seen
 * twice when another server needs a tracepoint hook. */
#pragma once

#include "calls.bpf.h" /* bpf_session_is_return, CW_RUN_RETURN / CW_SKIP_RETURN */
#include "maps.bpf.h"

#if defined(__TARGET_ARCH_x86)
#define CW_NR_READ 0
#define CW_NR_WRITE 1
#define CW_NR_CLOSE 3
#define CW_NR_READV 19
#define CW_NR_WRITEV 20
#define CW_NR_ACCEPT 43
#define CW_NR_SENDTO 44
#define CW_NR_RECVFROM 45
#define CW_NR_SENDMSG 46
#define CW_NR_RECVMSG 47
#define CW_NR_ACCEPT4 288
#elif defined(__TARGET_ARCH_arm64)
#define CW_NR_READ 63
#define CW_NR_WRITE 64
#define CW_NR_CLOSE 57
#define CW_NR_READV 65
#define CW_NR_WRITEV 66
#define CW_NR_ACCEPT 202
#define CW_NR_SENDTO 206
#define CW_NR_RECVFROM 207
#define CW_NR_SENDMSG 211
#define CW_NR_RECVMSG 212
#define CW_NR_ACCEPT4 242
#endif

/* Vectored syscalls: at most this many iovecs get a record of their own; the bytes of the
 * rest go in one record without data (user space counts them as unseen). */
#define CW_SOCK_MAX_IOV 12

#define CW_EAGAIN 11 /* x86-64 and arm64 alike */

/* Serving processes (tgid → the hook that traces it: CW_SOCK_BY_*), filled by the collector
 * (collector/servers.h, collector/bpf_loader.cpp trace_server). */
#define CW_SOCK_BY_SYSCALL 1 /* syscall or raw tracepoints */
#define CW_SOCK_BY_LIBC 2    /* uprobes on its libc */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} sock_pids SEC(".maps");

struct cw_sock_key {
  __u32 pid; /* tgid */
  __s32 fd;
};

/* What a serving process's fd is (sock_fds values). */
#define CW_FD_TRACED 1 /* a connection it accepted: its syscalls are recorded */
#define CW_FD_OTHER 2  /* not an accepted TCP connection (a file, a pipe, an eventfd, a client
                        * socket of its own), or causeway's own scrape: looked at once, skipped */
#define CW_FD_TLS 3    /* a traced connection whose TLS plaintext is read through libssl
                        * (bpf/ssl.bpf.h): its own (cipher) bytes are not copied */

/* The fds of serving processes looked at: connections accepted while traced, connections
 * found at their first read or write (accepted before the trace), and fds found not to be
 * connections, so each costs the lookup once. Close forgets the fd. LRU: a server that leaks
 * fds evicts its oldest instead of making new ones invisible. 65536 × ~80 B ≈ 5 MiB. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct cw_sock_key);
  __type(value, __u8);
} sock_fds SEC(".maps");

/* The ports each serving process listens on ({netns, port} → 1), filled by the collector
 * (collector/servers.h): a TCP connection first seen at a read or write is the server's side
 * of an accepted one when its local port is one of these (a connection the server made
 * itself, to a database or an upstream, has an ephemeral local port). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct cw_listen_key);
  __type(value, __u8);
} sock_listen SEC(".maps");

#include "arrival.bpf.h" /* arrival times of the bytes read (filtered by sock_listen) */

/* Connections of causeway's own /metrics scraper, while they are open: the server side's
 * 4-tuple in its network namespace (struct cw_sock_conn with adopted 0), written by the
 * scraper after it binds its socket and before it connects, removed before it closes it
 * (collector/engine_scraper.h; one the server had not answered stays a while longer: it may
 * still accept it from its backlog). A traced server that accepts one leaves it untraced,
 * counts it (CW_COUNT_OWN_SCRAPE) and forgets the tuple: the exact connection, never a port
 * seen before. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, struct cw_sock_conn);
  __type(value, __u8);
} own_conns SEC(".maps");

/* Every causeway tracer's scrape connections on this host, shared: the first tracer's map,
 * found by the next ones through its map id (collector/tracer_conns.h). Each tracer writes its
 * scraper's tuples here too, with when the entry stops holding (bpf_ktime_get_ns clock; a
 * tracer killed before it removed its own leaves nothing that holds past that), and removes
 * them when it removes them from own_conns. A traced server that accepts a connection another
 * tracer made leaves it untraced and counts it (cw_tracer_scrapes: not this tracer's, so not
 * CW_COUNT_OWN_SCRAPE); nothing here is deleted by the kernel side, since every tracer that
 * traces the server must see it. */
#define CW_TRACER_CONNS_MAX 4096
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, CW_TRACER_CONNS_MAX);
  __type(key, struct cw_sock_conn);
  __type(value, __u64); /* the entry holds until then */
} tracer_conns SEC(".maps");
__u64 cw_tracer_scrapes = 0; /* collector_stats http_tracer_scrapes_excluded */

static __always_inline bool sock_tracer_conn(const struct cw_sock_conn *c) {
  const __u64 *until = bpf_map_lookup_elem(&tracer_conns, c);
  return until && *until > bpf_ktime_get_ns();
}

/* A syscall in flight on a traced connection (tid → its arguments), read back on exit. */
struct cw_sock_args {
  __u64 buf;     /* buffer, iovec array or msghdr */
  __u64 iovcnt;  /* the third argument: readv/writev's iovec count, read/write/sendto's length */
  __s32 fd;
  __u8 sock_op;  /* enum cw_sock_op */
  __u8 shape;    /* 0 flat buffer, 1 iovec array, 2 msghdr */
  /* On the libc hook a write is stamped at its entry, not at the return trap, which a
   * preemption after the syscall can delay past the peer's receipt of the bytes. The
   * tracepoint hooks' exit runs in the kernel before any such preemption. */
  __u8 by_libc;
  __u8 _pad;
  __u64 enter_ns; /* the syscall's entry: a write that slept for room shows in its duration */
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct cw_sock_args);
} sock_args SEC(".maps");

/* Records of 88 + 128, 384 or 1024 bytes (an accept 132): 1000 req/s × ~25 records (a read,
 * a head, 20 tokens, a close) ≈ 25k records/s ≈ 12 MB/s; a burst of 5,000 connections
 * accepted at once, each a GET and a small answer, ≈ 5,000 × 4 records ≈ 3.5 MB. A thread of
 * its own copies the records out as they come (collector/sock_drain.h); the ring only has to
 * ride out that thread's wake-up. A syscall of 64 KiB or more takes 65 records (~71 KiB).
 * User space sets the size (collector/bpf_loader.h LoaderOptions, 16 MiB); this is the
 * default. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 << 20);
} rb_sock SEC(".maps");

#define CW_SHAPE_FLAT 0
#define CW_SHAPE_IOV 1
#define CW_SHAPE_MSG 2

static __always_inline void sock_fill(struct cw_sock_event *e, __u64 id, __u64 ts, __u8 op, __s32 fd, __s64 bytes, __u16 captured) {
  fill_header_nocg(&e->hdr, id, ts, 0, CW_REC_SOCK, CW_SRC_NET);
  e->bytes = bytes;
  e->fd = fd;
  e->captured = captured;
  e->sock_op = op;
  e->send = CW_SEND_OK;
  __builtin_memset(e->_union, 0, sizeof(e->_union));
}

/* A read's or write's outcome beside its bytes: how the write went, when the syscall
 * entered (0 for accept and close) and where the record's bytes start in the syscall's. */
struct cw_sock_io {
  __u64 enter_ns;
  __u64 offset;
  __u64 total; /* what the syscall moved */
  __u8 send;   /* enum cw_sock_send */
  __u8 flags;  /* hdr.flags of the records: CW_F_SOCK_TLS for TLS plaintext (bpf/ssl.bpf.h) */
  __u32 arrive_first_us, arrive_last_us; /* reads: bpf/arrival.bpf.h; 0 unknown */
};

/* One record with up to `cap` bytes copied from user memory at buf (cap is a constant: two
 * reservation sizes). */
static __always_inline void sock_emit_cap(__u64 id, __u64 ts, __u8 op, __s32 fd, __s64 bytes, __u64 buf, const __u32 cap,
                                          struct cw_sock_io io) {
  struct cw_sock_event *e = bpf_ringbuf_reserve(&rb_sock, CW_SOCK_HDR_BYTES + cap, 0);
  if (!e) {
    count_drop(CW_DROP_RING_SOCK);
    return;
  }
  __u32 n = bytes > 0 ? (__u32)(bytes < cap ? bytes : cap) : 0;
  if (!buf) n = 0;
  asm volatile("" : "+r"(n)); /* keep the clamp below: the verifier needs n <= cap on this path */
  if (n > cap) n = cap;
  if (n && bpf_probe_read_user(e->data, n, (const void *)buf) != 0) n = 0;
  sock_fill(e, id, ts, op, fd, bytes, (__u16)n);
  e->hdr.flags = io.flags;
  e->send = io.send;
  e->enter_ns = io.enter_ns;
  e->offset = io.offset;
  e->total = io.total;
  e->arrive_first_us = io.arrive_first_us;
  e->arrive_last_us = io.arrive_last_us;
  bpf_ringbuf_submit(e, 0);
}

static __always_inline void sock_emit(__u64 id, __u64 ts, __u8 op, __s32 fd, __s64 bytes, __u64 buf, struct cw_sock_io io) {
  if (bytes <= CW_SOCK_CAP_TINY) sock_emit_cap(id, ts, op, fd, bytes, buf, CW_SOCK_CAP_TINY, io);
  else if (bytes <= CW_SOCK_CAP_SMALL) sock_emit_cap(id, ts, op, fd, bytes, buf, CW_SOCK_CAP_SMALL, io);
  else sock_emit_cap(id, ts, op, fd, bytes, buf, CW_SOCK_CAP, io);
}

/* A buffer longer than one record, copied in CW_SOCK_CAP pieces by bpf_loop, piece i from
 * byte i × CW_SOCK_CAP; the context is read-only, so the verifier checks the body once, not
 * once per piece (a counter kept in the context would make every pass a new state). Bytes
 * past `copy` (the syscall's copy budget left) go in one record without data, so user space
 * knows how many it did not see and where they were. A piece the ring had no room for shows
 * as a jump in the next record's offset. */
struct cw_sock_span {
  __u64 id, ts;
  __u64 buf;  /* the buffer's first byte */
  __s64 n;    /* its bytes the syscall moved */
  __s64 copy; /* of which the first `copy` are copied */
  struct cw_sock_io io; /* io.offset: where the buffer starts in the syscall's bytes */
  __s32 fd;
  __u8 op;
};
#define CW_SOCK_PIECES (CW_SOCK_MAX_COPY / CW_SOCK_CAP + 1) /* the pieces and the rest */

static long sock_piece(__u64 i, void *ctx) {
  const struct cw_sock_span *s = ctx;
  const __s64 off = (__s64)(i * CW_SOCK_CAP);
  if (off >= s->n) return 1;
  struct cw_sock_io io = s->io;
  io.offset += off;
  if (off >= s->copy) {
    sock_emit_cap(s->id, s->ts, s->op, s->fd, s->n - off, 0, 0, io);
    return 1;
  }
  const __s64 n = s->copy - off < CW_SOCK_CAP ? s->copy - off : CW_SOCK_CAP;
  sock_emit(s->id, s->ts, s->op, s->fd, n, s->buf + off, io);
  return 0;
}

/* n bytes the syscall moved from buf, starting at io.offset in its bytes, within the copy
 * budget left; returns the budget then left. One record (the common case: a head, an SSE
 * event) takes no loop. */
static __always_inline __s64 sock_emit_span(__u64 id, __u64 ts, __u8 op, __s32 fd, __s64 n, __u64 buf, struct cw_sock_io io,
                                            __s64 budget) {
  if (n <= CW_SOCK_CAP && n <= budget) {
    sock_emit(id, ts, op, fd, n, buf, io);
    return budget - n;
  }
  const __s64 copy = n < budget ? n : budget > 0 ? budget : 0;
  struct cw_sock_span s = {.id = id, .ts = ts, .buf = buf, .n = n, .copy = copy, .io = io, .fd = fd, .op = op};
  bpf_loop(CW_SOCK_PIECES, sock_piece, &s, 0);
  return budget - copy;
}

#define CW_AF_INET 2
#define CW_AF_INET6 10
#define CW_S_IFMT 00170000
#define CW_S_IFSOCK 0140000
#define CW_IPPROTO_TCP 6
#define CW_SOCK_STREAM 1
#define CW_TCP_LISTEN 10
#define CW_TCP_ESTABLISHED 1

/* The kernel socket behind fd in the current process: task → files → fdtable → file → its
 * inode says a socket → socket → sock (Pixie and Coroot read a connection's addresses the
 * same way). 0 when fd is not a socket. The fd table is RCU-protected; a racing close makes
 * the reads fail or see a socket being torn down, never fault. */
static __always_inline struct sock *sock_of_fd(__s32 fd) {
  if (fd < 0) return 0;
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
  if (!fdt || (__u32)fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file **fds = BPF_CORE_READ(fdt, fd);
  struct file *f = 0;
  if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) != 0 || !f) return 0;
  if ((BPF_CORE_READ(f, f_inode, i_mode) & CW_S_IFMT) != CW_S_IFSOCK) return 0;
  struct socket *so = BPF_CORE_READ(f, private_data);
  return so ? BPF_CORE_READ(so, sk) : 0;
}

/* The 4-tuple and namespace of a TCP socket (IPv4, IPv6, IPv4-mapped IPv6 as IPv4); false
 * for anything else (UDP, Unix, a listener). */
static __always_inline bool sock_tuple(struct sock *sk, struct cw_sock_conn *c) {
  __builtin_memset(c, 0, sizeof(*c));
  if (!sk) return false;
  const __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  if (family != CW_AF_INET && family != CW_AF_INET6) return false;
  if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != CW_IPPROTO_TCP ||
      BPF_CORE_READ_BITFIELD_PROBED(sk, sk_type) != CW_SOCK_STREAM)
    return false;
  if (BPF_CORE_READ(sk, __sk_common.skc_state) == CW_TCP_LISTEN) return false;
  c->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  c->local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
  c->peer_port = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
  c->family = CW_AF_INET;
  if (family == CW_AF_INET) {
    const __u32 local4 = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
    const __u32 peer4 = BPF_CORE_READ(sk, __sk_common.skc_daddr);
    __builtin_memcpy(c->local_addr, &local4, 4);
    __builtin_memcpy(c->peer_addr, &peer4, 4);
    return true;
  }
  __u8 local[16], peer[16];
  BPF_CORE_READ_INTO(&local, sk, __sk_common.skc_v6_rcv_saddr);
  BPF_CORE_READ_INTO(&peer, sk, __sk_common.skc_v6_daddr);
  /* ::ffff:a.b.c.d, a dual-stack listener's IPv4 client: stored as a.b.c.d */
  const __u32 *l32 = (const __u32 *)local, *p32 = (const __u32 *)peer;
  if (l32[0] == 0 && l32[1] == 0 && l32[2] == __builtin_bswap32(0xffff) && p32[0] == 0 && p32[1] == 0 &&
      p32[2] == __builtin_bswap32(0xffff)) {
    __builtin_memcpy(c->local_addr, &local[12], 4);
    __builtin_memcpy(c->peer_addr, &peer[12], 4);
    return true;
  }
  c->family = CW_AF_INET6;
  __builtin_memcpy(c->local_addr, local, 16);
  __builtin_memcpy(c->peer_addr, peer, 16);
  return true;
}

/* A connection a serving process now holds at fd: traced from here on (an accept record with
 * its identity), unless it is a scrape of this or another causeway tracer, or (found at a
 * read or write) not the server side of an accepted connection. Returns whether it is traced. */
static __always_inline bool sock_take_conn(__u64 id, __s32 fd, bool adopted) {
  struct cw_sock_key k = {.pid = id >> 32, .fd = fd};
  struct cw_sock_conn c;
  __u8 what = CW_FD_TRACED;
  const bool tcp = sock_tuple(sock_of_fd(fd), &c);
  if (tcp && bpf_map_lookup_elem(&own_conns, &c)) {
    what = CW_FD_OTHER;
    count_drop(CW_COUNT_OWN_SCRAPE);
    bpf_map_delete_elem(&own_conns, &c); /* matched once: the fd stays marked */
  } else if (tcp && sock_tracer_conn(&c)) {
    what = CW_FD_OTHER; /* another causeway tracer's scrape */
    __sync_fetch_and_add(&cw_tracer_scrapes, 1);
  } else if (adopted) {
    struct cw_listen_key lk = {.netns = c.netns, .port = c.local_port};
    if (!tcp || !bpf_map_lookup_elem(&sock_listen, &lk)) what = CW_FD_OTHER;
  }
  if (bpf_map_update_elem(&sock_fds, &k, &what, BPF_ANY) != 0) {
    count_drop(CW_DROP_SOCK_CONN_MAP);
    return false;
  }
  if (what != CW_FD_TRACED) return false;
  struct cw_sock_event *e = bpf_ringbuf_reserve(&rb_sock, CW_SOCK_HDR_BYTES + sizeof(struct cw_sock_conn), 0);
  if (!e) {
    count_drop(CW_DROP_RING_SOCK);
    return true;
  }
  c.adopted = adopted;
  sock_fill(e, id, bpf_ktime_get_ns(), CW_SOCK_ACCEPT, fd, 0, sizeof(struct cw_sock_conn));
  __builtin_memcpy(e->data, &c, sizeof(c));
  bpf_ringbuf_submit(e, 0);
  return true;
}

/* What fd is to the process (CW_FD_*): an fd not looked at yet is looked at now (a
 * connection accepted before the trace started is taken at its first read or write). */
static __always_inline __u8 sock_fd_what(__u64 id, __s32 fd) {
  struct cw_sock_key k = {.pid = id >> 32, .fd = fd};
  __u8 *v = bpf_map_lookup_elem(&sock_fds, &k);
  if (v) return *v;
  return sock_take_conn(id, fd, true) ? CW_FD_TRACED : CW_FD_OTHER;
}

/* Whether fd is a traced connection of the process (its bytes, or its TLS plaintext). */
static __always_inline bool sock_conn(__u64 id, __s32 fd) {
  const __u8 what = sock_fd_what(id, fd);
  return what == CW_FD_TRACED || what == CW_FD_TLS;
}

/* ---- For the TLS plaintext (bpf/ssl.bpf.h): the traced connection each thread last read
 * from (tid → fd). An SSL_read's plaintext belongs to that connection when its SSL object was
 * not bound by SSL_set_fd: the read happened just before it (a memory BIO fed by the caller:
 * Python's asyncio).
 * On a connection read through libssl (CW_FD_TLS) it also keeps where the thread's cipher
 * reads since its last plaintext read began in the socket's byte stream (copied_seq at the
 * first one's entry): the SSL_read that returns their plaintext, inside them (a socket BIO)
 * or just after them (a memory BIO), is given the arrival of those bytes (bpf/arrival.bpf.h,
 * docs/INFERENCE.md "Arrival time"), though they are not recorded. */
struct cw_thread_read {
  __s32 fd;
  __u8 cipher_open; /* seq_start holds: cipher reads on fd not yet followed by plaintext */
  __u8 _pad[3];
  __u64 ts;         /* when: a read inside an SSL_read (after its entry) is its own socket BIO's */
  __u32 seq_start;  /* the first cipher byte read since the thread's last plaintext read */
  __u32 _pad2;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct cw_thread_read);
} sock_thread_fd SEC(".maps");

static __always_inline void sock_thread_read(__u32 tid, __s32 fd) {
  struct cw_thread_read r = {.fd = fd, .ts = bpf_ktime_get_ns()};
  bpf_map_update_elem(&sock_thread_fd, &tid, &r, BPF_ANY);
}

/* The entry of a cipher read on a TLS-read connection (not recorded): the thread's last read,
 * and the start of its cipher bytes since its last plaintext read (the first such read's
 * copied_seq: the next byte the socket will hand out, queued or still to come). */
static __always_inline void sock_thread_cipher_read(__u32 tid, __s32 fd) {
  const __u64 now = bpf_ktime_get_ns();
  struct cw_thread_read *open = bpf_map_lookup_elem(&sock_thread_fd, &tid);
  if (open && open->fd == fd && open->cipher_open) {
    open->ts = now;
    return;
  }
  struct cw_thread_read r = {.fd = fd, .ts = now};
  struct sock *sk = sock_of_fd(fd);
  if (sk) {
    r.seq_start = BPF_CORE_READ((struct tcp_sock *)sk, copied_seq);
    r.cipher_open = 1;
  }
  bpf_map_update_elem(&sock_thread_fd, &tid, &r, BPF_ANY);
}

/* What the TLS plaintext hook did and could not record (bpf/events.h enum cw_ssl_stat). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, CW_SSL_STAT__COUNT);
  __type(key, __u32);
  __type(value, __u64);
} ssl_stats SEC(".maps");

static __always_inline void ssl_count(__u32 what) {
  __u64 *c = bpf_map_lookup_elem(&ssl_stats, &what);
  if (c) *c += 1;
}

/* Where a syscall's arguments are: the raw tracepoint's saved user registers (CO-RE reads), or
 * the syscall tracepoint record's args[], copied to the stack by the program (the verifier
 * refuses a load through a context pointer the compiler has moved, as it does when one
 * address serves several args[] reads), or (libc hook) the C call's argument registers, copied
 * to the stack the same way. A constant in each program, so the branches fold. */
enum cw_sock_hook { CW_HOOK_RAW, CW_HOOK_SYSCALLS, CW_HOOK_LIBC /* args[] as SYSCALLS */ };

static __always_inline __u64 sock_arg(const void *src, const enum cw_sock_hook hook, const int i) {
  if (hook != CW_HOOK_RAW) return ((const __u64 *)src)[i];
  struct pt_regs *regs = (struct pt_regs *)src;
  if (i == 0) return PT_REGS_PARM1_CORE_SYSCALL(regs);
  if (i == 1) return PT_REGS_PARM2_CORE_SYSCALL(regs);
  return PT_REGS_PARM3_CORE_SYSCALL(regs);
}

/* The serving-process filter every hook runs first: a server traced by hook `by`. */
static __always_inline bool sock_pid(__u64 id, const __u8 by) {
  __u32 tgid = id >> 32;
  __u8 *v = bpf_map_lookup_elem(&sock_pids, &tgid);
  return v && *v == by;
}

/* Entry of syscall nr of a serving process: close ends a traced connection; the others note
 * their arguments (tid → sock_args) when the fd is a traced connection, or (accept) always. */
static __always_inline int sock_enter(__u64 id, const void *src, const enum cw_sock_hook hook, long nr) {
  if (cw_stopped) return 0;
  __u32 tgid = id >> 32;
  struct cw_sock_args a = {};
  switch (nr) {
    case CW_NR_ACCEPT:
    case CW_NR_ACCEPT4:
      a.sock_op = CW_SOCK_ACCEPT;
      a.fd = (__s32)sock_arg(src, hook, 0);
      break;
    case CW_NR_CLOSE: {
      struct cw_sock_key k = {.pid = tgid, .fd = (__s32)sock_arg(src, hook, 0)};
      __u8 *v = bpf_map_lookup_elem(&sock_fds, &k);
      if (!v) return 0;
      const bool traced = *v == CW_FD_TRACED || *v == CW_FD_TLS;
      bpf_map_delete_elem(&sock_fds, &k);
      if (!traced) return 0;
      struct sock *sk = sock_of_fd(k.fd);
      arrival_forget(sk);
      /* Still open at close entry: a socket past ESTABLISHED (CLOSE_WAIT after the client's
       * FIN, CLOSE after its RST) means the client left before the server closed. */
      const __u64 now = bpf_ktime_get_ns();
      if (sk && BPF_CORE_READ(sk, __sk_common.skc_state) != CW_TCP_ESTABLISHED)
        sock_emit_cap(id, now, CW_SOCK_HANGUP, k.fd, 0, 0, 0, (struct cw_sock_io){});
      sock_emit_cap(id, now, CW_SOCK_CLOSE, k.fd, 0, 0, 0, (struct cw_sock_io){});
      return 0;
    }
    case CW_NR_READ:
    case CW_NR_RECVFROM:
      a.sock_op = CW_SOCK_READ;
      break;
    case CW_NR_WRITE:
    case CW_NR_SENDTO:
      a.sock_op = CW_SOCK_WRITE;
      break;
    case CW_NR_READV:
      a.sock_op = CW_SOCK_READ;
      a.shape = CW_SHAPE_IOV;
      break;
    case CW_NR_WRITEV:
      a.sock_op = CW_SOCK_WRITE;
      a.shape = CW_SHAPE_IOV;
      break;
    case CW_NR_RECVMSG:
      a.sock_op = CW_SOCK_READ;
      a.shape = CW_SHAPE_MSG;
      break;
    case CW_NR_SENDMSG:
      a.sock_op = CW_SOCK_WRITE;
      a.shape = CW_SHAPE_MSG;
      break;
    default:
      return 0;
  }
  if (a.sock_op != CW_SOCK_ACCEPT) {
    a.fd = (__s32)sock_arg(src, hook, 0);
    const __u8 what = sock_fd_what(id, a.fd);
    if (what == CW_FD_TLS) {
      /* Its plaintext comes from libssl: the cipher bytes are neither copied nor looked at on
       * return (on the libc session hook: no return trap). A read still names the thread's
       * connection for the SSL_read that follows it (a memory BIO), and where its bytes start,
       * for that SSL_read's arrival. */
      if (a.sock_op == CW_SOCK_READ) sock_thread_cipher_read((__u32)id, a.fd);
      ssl_count(CW_SSL_STAT_CIPHER_SKIPPED);
      return 0;
    }
    if (what != CW_FD_TRACED) return 0;
    a.buf = sock_arg(src, hook, 1);
    a.iovcnt = sock_arg(src, hook, 2);
  }
  a.enter_ns = bpf_ktime_get_ns();
  a.by_libc = hook == CW_HOOK_LIBC;
  __u32 tid = (__u32)id;
  if (bpf_map_update_elem(&sock_args, &tid, &a, BPF_ANY) != 0) count_drop(CW_DROP_SOCK_CONN_MAP);
  return 0;
}

SEC("raw_tp/sys_enter")
int cw_sock_enter(struct bpf_raw_tracepoint_args *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!sock_pid(id, CW_SOCK_BY_SYSCALL)) return 0;
  return sock_enter(id, (const void *)ctx->args[0], CW_HOOK_RAW, (long)ctx->args[1]);
}

/* Attached to syscalls:sys_enter_<name> of each socket syscall but close (collector/
 * sock_hook.cpp lists them): all have at least three arguments, and a syscall tracepoint
 * refuses a program that reads past its record. The record's syscall number is an int (the
 * rest of `id` is padding). */
SEC("tracepoint")
int cw_sock_sys_enter(struct trace_event_raw_sys_enter *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!sock_pid(id, CW_SOCK_BY_SYSCALL)) return 0;
  const __u64 args[3] = {ctx->args[0], ctx->args[1], ctx->args[2]};
  return sock_enter(id, args, CW_HOOK_SYSCALLS, (int)ctx->id);
}

/* syscalls:sys_enter_close: one argument, so a program of its own. */
SEC("tracepoint")
int cw_sock_sys_close(struct trace_event_raw_sys_enter *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!sock_pid(id, CW_SOCK_BY_SYSCALL)) return 0;
  const __u64 args[1] = {ctx->args[0]};
  return sock_enter(id, args, CW_HOOK_SYSCALLS, CW_NR_CLOSE);
}

/* Vectored I/O: each iovec in CW_SOCK_CAP pieces like a flat buffer, the syscall's copy
 * budget shared by its iovecs, in one bpf_loop. The iovecs are read first into the context;
 * the loop keeps only which iovec and which piece of it come next (small counters: a few
 * hundred states at most), every other value is read back through a variable index, which
 * the verifier takes as unknown, so passes do not differ by them. */
struct cw_sock_iovs {
  __u64 id, ts;
  __u64 base[CW_SOCK_MAX_IOV];
  /* 32 bits each: one syscall moves less than 2 GiB (the kernel's MAX_RW_COUNT), and the
   * narrower arrays keep CW_SOCK_MAX_IOV iovecs within the 512-byte BPF stack. */
  __s32 len[CW_SOCK_MAX_IOV];   /* of what the syscall moved */
  __s32 start[CW_SOCK_MAX_IOV]; /* where each starts in the syscall's bytes */
  __u64 iov, cnt, asked;        /* the iovec array, its count, the bytes its iovecs hold */
  __s64 seen;                   /* bytes in those iovecs */
  __s64 ret;
  struct cw_sock_io io;
  __u32 n;    /* iovecs read */
  __u32 k, p; /* the next piece: iovec k, piece p of it */
  __s32 fd;
  __u8 op;
};
/* The pieces, a partial piece and a step per iovec, the rest. */
#define CW_SOCK_IOV_STEPS (CW_SOCK_MAX_COPY / CW_SOCK_CAP + 2 * CW_SOCK_MAX_IOV + 1)

static long sock_iov_piece(__u64 i, void *ctx) {
  struct cw_sock_iovs *s = ctx;
  const __u32 k = s->k;
  struct cw_sock_io io = s->io;
  if (k >= s->n || k >= CW_SOCK_MAX_IOV) { /* past the iovecs read: the rest, by count */
    io.offset = s->seen;
    if (s->ret > s->seen) sock_emit_cap(s->id, s->ts, s->op, s->fd, s->ret - s->seen, 0, 0, io);
    return 1;
  }
  const __s64 len = s->len[k];
  const __s64 off = (__s64)s->p * CW_SOCK_CAP;
  if (off >= len) {
    s->k = k + 1;
    s->p = 0;
    return 0;
  }
  const __s64 at = s->start[k] + off;
  io.offset = at;
  if (at >= CW_SOCK_MAX_COPY) { /* past the budget: the rest, by count */
    sock_emit_cap(s->id, s->ts, s->op, s->fd, s->ret - at, 0, 0, io);
    return 1;
  }
  __s64 n = len - off < CW_SOCK_CAP ? len - off : CW_SOCK_CAP;
  if (n > CW_SOCK_MAX_COPY - at) n = CW_SOCK_MAX_COPY - at;
  sock_emit(s->id, s->ts, s->op, s->fd, n, s->base[k] + off, io);
  s->p++;
  return 0;
}

/* Reads iovec i into the context (a bpf_loop step, not an unrolled loop: unrolled, 12 iovecs
 * made the verifier's walk of every hook too long to load). */
static long sock_iov_read(__u64 i, void *ctx) {
  struct cw_sock_iovs *s = ctx;
  struct iovec v = {};
  if (i >= s->cnt || i >= CW_SOCK_MAX_IOV ||
      bpf_probe_read_user(&v, sizeof(v), (const void *)(s->iov + i * sizeof(struct iovec))) != 0)
    return 1;
  s->asked += v.iov_len;
  __s64 left = s->ret - s->seen;
  __s64 n = (__s64)v.iov_len < left ? (__s64)v.iov_len : left;
  if (n < 0) n = 0;
  const __u32 k = (__u32)i;
  if (k >= CW_SOCK_MAX_IOV) return 1; /* again on the index itself, for the verifier */
  s->base[k] = (__u64)v.iov_base;
  s->len[k] = (__s32)n;
  s->start[k] = (__s32)s->seen;
  s->seen += n;
  s->n = k + 1;
  return 0;
}

/* The iovecs' lengths are summed as they are read: a write that moved less than they hold
 * was short (beyond the first CW_SOCK_MAX_IOV, what they hold is not known and the write
 * counts as whole). */
static __always_inline void sock_emit_iov(__u64 id, __u64 ts, const struct cw_sock_args *a, __u64 iov, __u64 cnt, __s64 ret,
                                          struct cw_sock_io io) {
  struct cw_sock_iovs s = {.id = id, .ts = ts, .ret = ret, .fd = a->fd, .op = a->sock_op, .io = io, .iov = iov, .cnt = cnt};
  bpf_loop(CW_SOCK_MAX_IOV, sock_iov_read, &s, 0);
  if (a->sock_op == CW_SOCK_WRITE && (__u64)ret < s.asked) s.io.send = CW_SEND_SHORT;
  bpf_loop(CW_SOCK_IOV_STEPS, sock_iov_piece, &s, 0);
}

/* Exit of a syscall of a serving process whose entry noted its arguments: the record(s). A
 * function of its own (a BPF-to-BPF call with its own stack frame): inlined beside sock_enter
 * in the session uprobe, the two frames together passed the 512-byte stack limit. */
static __noinline int sock_exit(__u64 id, __s64 ret) {
  __u32 tid = (__u32)id;
  struct cw_sock_args *ap = bpf_map_lookup_elem(&sock_args, &tid);
  if (!ap) return 0;
  struct cw_sock_args a = *ap;
  bpf_map_delete_elem(&sock_args, &tid);
  const __u64 ts = a.by_libc && a.sock_op == CW_SOCK_WRITE ? a.enter_ns : bpf_ktime_get_ns();
  if (ret <= 0) {
    /* A write refused for a full send buffer: the client or the link is not taking the
     * response (docs/INFERENCE.md "network"). Other failures, EOF and the EAGAIN of reads
     * (non-blocking servers read until it) are not recorded. On the libc hook a failed call
     * returns -1 (the reason is in errno), so its EAGAIN is not seen. */
    if (ret == -CW_EAGAIN && a.sock_op == CW_SOCK_WRITE)
      sock_emit_cap(id, ts, CW_SOCK_WRITE, a.fd, 0, 0, 0, (struct cw_sock_io){.enter_ns = a.enter_ns, .send = CW_SEND_EAGAIN});
    return 0;
  }
  if (a.sock_op == CW_SOCK_ACCEPT) {
    sock_take_conn(id, (__s32)ret, false);
    return 0;
  }
  struct cw_sock_io io = {.enter_ns = a.enter_ns, .total = ret};
  if (a.sock_op == CW_SOCK_READ) {
    sock_thread_read(tid, a.fd); /* bpf/ssl.bpf.h */
    arrival_of_read(sock_of_fd(a.fd), ret, ts, &io.arrive_first_us, &io.arrive_last_us);
  }
  if (a.shape == CW_SHAPE_FLAT) {
    /* write/sendto: the third argument is the length asked */
    if (a.sock_op == CW_SOCK_WRITE && (__u64)ret < a.iovcnt) io.send = CW_SEND_SHORT;
    sock_emit_span(id, ts, a.sock_op, a.fd, ret, a.buf, io, CW_SOCK_MAX_COPY);
  } else if (a.shape == CW_SHAPE_IOV) {
    sock_emit_iov(id, ts, &a, a.buf, a.iovcnt, ret, io);
  } else {
    struct user_msghdr m = {};
    if (bpf_probe_read_user(&m, sizeof(m), (const void *)a.buf) != 0) {
      sock_emit_cap(id, ts, a.sock_op, a.fd, ret, 0, 0, io);
      return 0;
    }
    sock_emit_iov(id, ts, &a, (__u64)m.msg_iov, m.msg_iovlen, ret, io);
  }
  return 0;
}

SEC("raw_tp/sys_exit")
int cw_sock_exit(struct bpf_raw_tracepoint_args *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!sock_pid(id, CW_SOCK_BY_SYSCALL)) return 0;
  return sock_exit(id, (__s64)ctx->args[1]);
}

/* Attached to syscalls:sys_exit_<name> of each socket syscall but close (its entry emits). */
SEC("tracepoint")
int cw_sock_sys_exit(struct trace_event_raw_sys_exit *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!sock_pid(id, CW_SOCK_BY_SYSCALL)) return 0;
  return sock_exit(id, ctx->ret);
}

/* The libc hook: the cookie of each attach point is the CW_NR_* of the syscall the function
 * makes (recv and send: recvfrom and sendto; the __*_chk variants: their plain function), so
 * sock_enter / sock_exit run as for the syscall; the arguments come from the registers of the
 * C calling convention. libc's syscall() (libuv closes its sockets with syscall(SYS_close))
 * has CW_LIBC_SYSCALL: its first argument is the number, and only close is taken from it (an
 * entry noted there would have no uretprobe to read it back). */
#define CW_LIBC_SYSCALL 0xffff

static __always_inline void sock_libc_enter(struct pt_regs *ctx, __u64 id) {
  long nr = (long)bpf_get_attach_cookie(ctx);
  if (nr == CW_LIBC_SYSCALL) {
    if ((long)PT_REGS_PARM1(ctx) != CW_NR_CLOSE) return;
    const __u64 args[1] = {PT_REGS_PARM2(ctx)};
    sock_enter(id, args, CW_HOOK_LIBC, CW_NR_CLOSE);
    return;
  }
  const __u64 args[3] = {PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx)};
  sock_enter(id, args, CW_HOOK_LIBC, nr);
}

/* accept and accept4 return an int: its sign is in the low 32 bits of the register only. */
static __always_inline void sock_libc_exit(struct pt_regs *ctx, __u64 id) {
  long nr = (long)bpf_get_attach_cookie(ctx);
  __s64 ret = (__s64)PT_REGS_RC(ctx);
  if (nr == CW_NR_ACCEPT || nr == CW_NR_ACCEPT4) ret = (__s32)ret;
  sock_exit(id, ret);
}

/* Kernels with session uprobes (6.13+; collector/uprobe_multi.h): one program at the entry
 * and, only when the entry noted a call on a traced connection, at the return; any other
 * call (another fd, close, syscall()) returns without a second trap. */
SEC("uprobe")
int cw_sock_libc_session(struct pt_regs *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!sock_pid(id, CW_SOCK_BY_LIBC)) return CW_SKIP_RETURN;
  if (bpf_session_is_return()) {
    sock_libc_exit(ctx, id);
    return 0;
  }
  sock_libc_enter(ctx, id);
  __u32 tid = (__u32)id;
  return bpf_map_lookup_elem(&sock_args, &tid) ? CW_RUN_RETURN : CW_SKIP_RETURN;
}

/* Older kernels: a uprobe on every function and a uretprobe on those whose return makes the
 * record (all but close and syscall(), whose entry emits). */
SEC("uprobe")
int cw_sock_libc_enter(struct pt_regs *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (sock_pid(id, CW_SOCK_BY_LIBC)) sock_libc_enter(ctx, id);
  return 0;
}

SEC("uretprobe")
int cw_sock_libc_exit(struct pt_regs *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (sock_pid(id, CW_SOCK_BY_LIBC)) sock_libc_exit(ctx, id);
  return 0;
}
