/* TLS plaintext of serving processes: uprobes on the libssl (OpenSSL 3) a server maps, at
 * SSL_read, SSL_write, SSL_read_ex and SSL_write_ex (and SSL_set_fd's entry), attached with
 * the server's pid like the libc hook (collector/ssl_attach.h), so no other process traps.
 * The plaintext is copied as socket records (bpf/sock.bpf.h's copy, the same pieces and
 * budget) flagged CW_F_SOCK_TLS; the HTTP reassembly then reads those and ignores the
 * ciphertext of the connection (requests/tracker.cpp, docs/INFERENCE.md "TLS").
 *
 * Which connection: an SSL object does not say its fd in a stable place (Pixie reads
 * ssl->rbio->num at per-version offsets; a memory BIO has none), so:
 * - SSL_set_fd (blocking or threaded servers: CPython's ssl.SSLSocket, nginx): an entry-only
 *   uprobe binds the SSL object to its fd, exactly, for its reads and writes. So does an
 *   SSL_read during which its thread read a traced socket (a socket BIO set up before the
 *   trace: OpenSSL read the ciphertext itself);
 * - otherwise (memory BIOs: CPython's asyncio and uvloop, ssl.SSLObject) the connection the
 *   calling thread last read from (sock_thread_fd, kept by the socket hook): the event loop
 *   reads the ciphertext from the socket and feeds it to the SSL object in the same callback,
 *   just before SSL_read. Such an SSL_read binds its object to that fd (ssl_fds); an SSL_write
 *   goes to the fd its object is bound to (a server reads a request before it writes), else
 *   to the thread's last read. A library that reads one connection's ciphertext and decrypts
 *   another's in between would mislabel them (counted: CW_SSL_STAT_REBOUND).
 *
 * When: a read is copied at its return (the bytes exist then). A write's bytes exist at its
 * entry; on an SSL object fed through memory BIOs (seen above) SSL_write cannot stop half-way
 * for the socket (its output goes to a growing memory buffer), so its plaintext is copied at
 * the entry, whole, and on kernels with session uprobes (6.13+) its return does not trap at
 * all. Every other write is copied at its return, with the count it reports.
 * Once a connection's plaintext is read, the socket hook stops copying its cipher bytes
 * (bpf/sock.bpf.h CW_FD_TLS); it still notes where they start, and an SSL_read's record
 * carries when the cipher bytes read for it arrived (ssl_read_arrival). Everything not
 * recorded is counted (enum cw_ssl_stat). */
#pragma once

#include "sock.bpf.h"

/* Cookies of the attach points (collector/ssl_attach.cpp kSslFunctions). */
#define CW_SSL_READ 1
#define CW_SSL_WRITE 2
#define CW_SSL_READ_EX 3  /* int SSL_read_ex(SSL *, void *, size_t, size_t *readbytes) */
#define CW_SSL_WRITE_EX 4 /* int SSL_write_ex(SSL *, const void *, size_t, size_t *written) */
#define CW_SSL_SET_FD 5   /* int SSL_set_fd(SSL *, int fd): entry only */

/* An SSL call in flight (tid → its arguments), read back at its return. */
struct cw_ssl_args {
  __u64 ssl;
  __u64 buf;
  __u64 done; /* the _ex functions: where they write the byte count */
  __u64 enter_ns;
  __u8 call;  /* CW_SSL_* */
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct cw_ssl_args);
} ssl_args SEC(".maps");

struct cw_ssl_key {
  __u32 pid; /* tgid */
  __u32 _pad;
  __u64 ssl;
};
/* SSL object → its connection. LRU: objects freed without a word from us age out. */
struct cw_ssl_fd {
  __s32 fd;
  __u8 exact;   /* SSL_set_fd, or a socket read inside one of its SSL_reads: its own socket BIO */
  __u8 mem_bio; /* its SSL_reads moved plaintext with no socket read inside: fed by its caller */
  __u16 _pad;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct cw_ssl_key);
  __type(value, struct cw_ssl_fd);
} ssl_fds SEC(".maps");

/* The traced connection fd of process pid, marked as read through libssl from now on (the
 * socket hook then leaves its cipher bytes); false (counted) when it is not one. */
static __always_inline bool ssl_conn(__u64 id, __s32 fd) {
  struct cw_sock_key fk = {.pid = id >> 32, .fd = fd};
  __u8 *what = bpf_map_lookup_elem(&sock_fds, &fk);
  if (what && *what == CW_FD_TLS) return true;
  if (what ? *what != CW_FD_TRACED : !sock_conn(id, fd)) { /* not looked at yet: looked at now */
    ssl_count(CW_SSL_STAT_UNTRACED);
    return false;
  }
  const __u8 tls = CW_FD_TLS;
  bpf_map_update_elem(&sock_fds, &fk, &tls, BPF_ANY);
  return true;
}

/* An SSL_read on fd returned plaintext at `at`: when the cipher bytes its thread read from fd
 * since its last plaintext read arrived (bpf/sock.bpf.h sock_thread_cipher_read; those reads
 * are not recorded), as (first_us << 32 | last_us) µs before `at`, 0 unknown; the next cipher
 * read starts a new span. Only spans opened on a TLS-read connection: before its first
 * plaintext the cipher reads are recorded with their own arrival (requests/tracker.cpp).
 * A function of its own, so its frame is not added to the session uprobe's. */
static __noinline __u64 ssl_read_arrival(__u32 tid, __s32 fd, __u64 at) {
  struct cw_thread_read *span = bpf_map_lookup_elem(&sock_thread_fd, &tid);
  if (!span || span->fd != fd || !span->cipher_open) return 0;
  span->cipher_open = 0;
  __u32 first_us = 0, last_us = 0;
  arrival_since(sock_of_fd(fd), span->seq_start, at, &first_us, &last_us);
  if (!first_us || !last_us) return 0;
  ssl_count(CW_SSL_STAT_ARRIVAL);
  return (__u64)first_us << 32 | last_us;
}

/* Plaintext of n bytes at buf, moved by an SSL call on fd: its records (a read's with the
 * arrival of its cipher bytes where known, else 0). */
static __always_inline void ssl_emit(__u64 id, __u64 ts, bool read, __s32 fd, __s64 n, __u64 buf, __u64 enter_ns,
                                     __u64 arrival) {
  ssl_count(CW_SSL_STAT_PLAINTEXT);
  struct cw_sock_io io = {.enter_ns = enter_ns, .total = n, .flags = CW_F_SOCK_TLS,
                          .arrive_first_us = (__u32)(arrival >> 32), .arrive_last_us = (__u32)arrival};
  sock_emit_span(id, ts, read ? CW_SOCK_READ : CW_SOCK_WRITE, fd, n, buf, io, CW_SOCK_MAX_COPY);
}

/* The entry of an SSL call of a serving process. Returns CW_SKIP_RETURN when the return has
 * nothing left to do (SSL_set_fd; a write copied here), else CW_RUN_RETURN with its arguments
 * noted for the return. */
static __always_inline int ssl_enter(struct pt_regs *ctx, __u64 id) {
  const __u8 call = (__u8)bpf_get_attach_cookie(ctx);
  struct cw_ssl_key k = {.pid = id >> 32, .ssl = PT_REGS_PARM1(ctx)};
  if (call == CW_SSL_SET_FD) {
    struct cw_ssl_fd b = {.fd = (__s32)PT_REGS_PARM2(ctx), .exact = 1};
    bpf_map_update_elem(&ssl_fds, &k, &b, BPF_ANY);
    return CW_SKIP_RETURN;
  }
  const __u64 now = bpf_ktime_get_ns();
  if (call == CW_SSL_WRITE || call == CW_SSL_WRITE_EX) {
    struct cw_ssl_fd *bound = bpf_map_lookup_elem(&ssl_fds, &k);
    if (bound && bound->mem_bio && !bound->exact) {
      const __s32 fd = bound->fd;
      const __s64 n = call == CW_SSL_WRITE ? (__s64)(int)PT_REGS_PARM3(ctx) : (__s64)PT_REGS_PARM3(ctx);
      if (n > 0 && ssl_conn(id, fd)) ssl_emit(id, now, false, fd, n, PT_REGS_PARM2(ctx), now, 0);
      return CW_SKIP_RETURN;
    }
  }
  struct cw_ssl_args a = {
      .ssl = k.ssl,
      .buf = PT_REGS_PARM2(ctx),
      .done = call == CW_SSL_READ_EX || call == CW_SSL_WRITE_EX ? PT_REGS_PARM4(ctx) : 0,
      .enter_ns = now,
      .call = call,
  };
  __u32 tid = (__u32)id;
  /* An entry still there: its return never ran (OpenSSL 3's SSL_read and SSL_read_ex do not
   * call each other, so not a nested call). */
  if (bpf_map_lookup_elem(&ssl_args, &tid)) ssl_count(CW_SSL_STAT_ARGS_LOST);
  if (bpf_map_update_elem(&ssl_args, &tid, &a, BPF_ANY) != 0) {
    ssl_count(CW_SSL_STAT_ARGS_LOST);
    return CW_SKIP_RETURN;
  }
  return CW_RUN_RETURN;
}

/* The return of an SSL call whose entry noted its arguments: the plaintext it moved. */
static __always_inline void ssl_exit(struct pt_regs *ctx, __u64 id) {
  __u32 tid = (__u32)id;
  struct cw_ssl_args *ap = bpf_map_lookup_elem(&ssl_args, &tid);
  if (!ap) return;
  struct cw_ssl_args a = *ap;
  bpf_map_delete_elem(&ssl_args, &tid);
  const int ret = (int)PT_REGS_RC(ctx);
  __s64 n = ret;
  if (a.done) { /* _ex: 1 on success, the count written through the last argument */
    __u64 moved = 0;
    if (ret != 1 || bpf_probe_read_user(&moved, sizeof(moved), (const void *)a.done) != 0) return;
    n = (__s64)moved;
  }
  if (n <= 0) return;
  const bool read = a.call == CW_SSL_READ || a.call == CW_SSL_READ_EX;
  struct cw_ssl_key k = {.pid = id >> 32, .ssl = a.ssl};
  struct cw_ssl_fd *bound = bpf_map_lookup_elem(&ssl_fds, &k);
  __s32 fd;
  if (bound && (bound->exact || !read)) {
    fd = bound->fd;
  } else {
    struct cw_thread_read *last = bpf_map_lookup_elem(&sock_thread_fd, &tid);
    if (!last) {
      ssl_count(CW_SSL_STAT_NO_CONN); /* no connection read on this thread yet */
      return;
    }
    fd = last->fd;
    if (!read) {
      /* a write on an object not seen reading: the thread's last read */
    } else if (last->ts > a.enter_ns) { /* read inside this SSL_read: its own socket BIO */
      struct cw_ssl_fd b = {.fd = fd, .exact = 1};
      bpf_map_update_elem(&ssl_fds, &k, &b, BPF_ANY);
    } else { /* fed by its caller */
      if (bound && bound->fd != fd) ssl_count(CW_SSL_STAT_REBOUND);
      if (!bound || bound->fd != fd || !bound->mem_bio) {
        struct cw_ssl_fd b = {.fd = fd, .mem_bio = 1};
        bpf_map_update_elem(&ssl_fds, &k, &b, BPF_ANY);
      }
    }
  }
  if (!ssl_conn(id, fd)) return;
  /* Writes are stamped at their entry, as on the libc hook (bpf/sock.bpf.h cw_sock_args). */
  const __u64 ts = read ? bpf_ktime_get_ns() : a.enter_ns;
  ssl_emit(id, ts, read, fd, n, a.buf, a.enter_ns, read ? ssl_read_arrival(tid, fd, ts) : 0);
}

/* Kernels with session uprobes (6.13+; collector/uprobe_multi.h): one program at the entry
 * and, only when the entry left work for it, at the return. */
SEC("uprobe")
int cw_ssl_session(struct pt_regs *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if (bpf_session_is_return()) {
    ssl_exit(ctx, id);
    return 0;
  }
  if (cw_stopped) return CW_SKIP_RETURN;
  __u32 tgid = id >> 32;
  if (!bpf_map_lookup_elem(&sock_pids, &tgid)) return CW_SKIP_RETURN; /* a server on either socket hook */
  return ssl_enter(ctx, id);
}

/* Older kernels: an entry and a return at each function (SSL_set_fd: the entry only). */
SEC("uprobe")
int cw_ssl_enter(struct pt_regs *ctx) {
  if (cw_stopped) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (bpf_map_lookup_elem(&sock_pids, &tgid)) ssl_enter(ctx, id);
  return 0;
}

SEC("uretprobe")
int cw_ssl_exit(struct pt_regs *ctx) {
  ssl_exit(ctx, bpf_get_current_pid_tgid());
  return 0;
}
