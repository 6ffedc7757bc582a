/* TLS plaintext of serving processes: uprobes on the libssl (OpenSSL 3) a server maps, at
 * SSL_read, SSL_write, SSL_read_ex and SSL_write_ex, attached with the server's pid like the
 * libc hook (collector/ssl_attach.h), so no other process traps. At each successful return
 * the plaintext is copied as socket records (bpf/sock.bpf.h's copy, the same pieces and
 * budget) flagged CW_F_SOCK_TLS; the HTTP reassembly then reads those and ignores the
 * ciphertext of the connection (requests/tracker.cpp, docs/INFERENCE.md "TLS").
 *
 * Which connection: an SSL object does not say its fd in a stable place (Pixie reads
 * ssl->rbio->num at per-version offsets; a memory BIO has none), so it is the connection the
 * calling thread last read from (sock_thread_fd, kept by the socket hook):
 * - SSL_set_fd (blocking or threaded servers: CPython's ssl.SSLSocket, nginx): SSL_read's
 *   own read(2) of the ciphertext happens inside it, on its thread;
 * - memory BIOs (CPython's asyncio and uvloop: ssl.SSLObject): the event loop reads the
 *   ciphertext from the socket and feeds it to the SSL object in the same callback, just
 *   before SSL_read.
 * An SSL_read binds its SSL object to that fd (ssl_fds); an SSL_write goes to the fd its SSL
 * object was last bound to (a server reads a request before it writes), else to the thread's
 * last read. The SSL_read-follows-its-recv rule is what an event loop does; a library that
 * reads one connection's ciphertext and decrypts another's in between would mislabel them. */
#pragma once

#include "sock.bpf.h"

/* Cookies of the attach points (collector/ssl_attach.cpp kSslFunctions). */
#define CW_SSL_READ 1
#define CW_SSL_WRITE 2
#define CW_SSL_READ_EX 3  /* int SSL_read_ex(SSL *, void *, size_t, size_t *readbytes) */
#define CW_SSL_WRITE_EX 4 /* int SSL_write_ex(SSL *, const void *, size_t, size_t *written) */

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
/* SSL object → the connection its last SSL_read came from. LRU: objects freed without a
 * word from us age out. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct cw_ssl_key);
  __type(value, __s32);
} ssl_fds SEC(".maps");

SEC("uprobe")
int cw_ssl_enter(struct pt_regs *ctx) {
  if (cw_stopped) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (!bpf_map_lookup_elem(&sock_pids, &tgid)) return 0; /* a server on either socket hook */
  const __u8 call = (__u8)bpf_get_attach_cookie(ctx);
  struct cw_ssl_args a = {
      .ssl = PT_REGS_PARM1(ctx),
      .buf = PT_REGS_PARM2(ctx),
      .done = call == CW_SSL_READ_EX || call == CW_SSL_WRITE_EX ? PT_REGS_PARM4(ctx) : 0,
      .enter_ns = bpf_ktime_get_ns(),
      .call = call,
  };
  __u32 tid = (__u32)id;
  if (bpf_map_update_elem(&ssl_args, &tid, &a, BPF_ANY) != 0) count_drop(CW_DROP_SOCK_CONN_MAP);
  return 0;
}

SEC("uretprobe")
int cw_ssl_exit(struct pt_regs *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tid = (__u32)id;
  struct cw_ssl_args *ap = bpf_map_lookup_elem(&ssl_args, &tid);
  if (!ap) return 0;
  struct cw_ssl_args a = *ap;
  bpf_map_delete_elem(&ssl_args, &tid);
  const int ret = (int)PT_REGS_RC(ctx);
  __s64 n = ret;
  if (a.done) { /* _ex: 1 on success, the count written through the last argument */
    __u64 moved = 0;
    if (ret != 1 || bpf_probe_read_user(&moved, sizeof(moved), (const void *)a.done) != 0) return 0;
    n = (__s64)moved;
  }
  if (n <= 0) return 0;
  const bool read = a.call == CW_SSL_READ || a.call == CW_SSL_READ_EX;
  struct cw_ssl_key k = {.pid = id >> 32, .ssl = a.ssl};
  __s32 *last = bpf_map_lookup_elem(&sock_thread_fd, &tid);
  __s32 *bound = read ? 0 : bpf_map_lookup_elem(&ssl_fds, &k);
  __s32 fd;
  if (bound) fd = *bound;
  else if (last) fd = *last;
  else return 0; /* no connection read on this thread yet: not one we traced */
  if (read) bpf_map_update_elem(&ssl_fds, &k, &fd, BPF_ANY);
  if (!sock_conn(k.pid, fd)) return 0; /* accepted before the trace, or closed */
  /* Writes are stamped at their entry, as on the libc hook (bpf/sock.bpf.h cw_sock_args). */
  const __u64 ts = read ? bpf_ktime_get_ns() : a.enter_ns;
  struct cw_sock_io io = {.enter_ns = a.enter_ns, .total = n, .flags = CW_F_SOCK_TLS};
  sock_emit_span(id, ts, read ? CW_SOCK_READ : CW_SOCK_WRITE, fd, n, a.buf, io, CW_SOCK_MAX_COPY);
  return 0;
}
