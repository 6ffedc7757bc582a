/* The one kernel <-> user contract of causeway.
 *
 * Plain C, fixed-width fields, explicit padding: included by the bpf/ programs (kernel) and by the
 * collector's decoder, which static_asserts every size and offset. Op ids are also the ids of
 * the trace DB's `ops` dictionary (tracedb/op_catalog.cpp), so they never change meaning:
 * add new ones, never renumber.
 */
#ifndef CAUSEWAY_EVENTS_H
#define CAUSEWAY_EVENTS_H

#ifndef __VMLINUX_H__
#include <stdint.h>
#include <linux/types.h> /* the same __u64 & co. as libbpf headers */
#endif

enum cw_source {
  CW_SRC_CUDA = 1,   /* libcudart */
  CW_SRC_DRIVER = 2, /* libcuda */
  CW_SRC_NCCL = 3,   /* libnccl */
  CW_SRC_HOST = 4,   /* sched, process lifecycle */
  CW_SRC_IO = 5,     /* block layer */
  CW_SRC_NET = 6,    /* TCP */
  CW_SRC_MEM = 7,    /* page allocation, OOM */
};

enum cw_op {
  /* CUDA runtime: 100..199 */
  CW_OP_CUDA_MALLOC = 100,
  CW_OP_CUDA_MALLOC_MANAGED = 101,
  CW_OP_CUDA_MALLOC_HOST = 102,
  CW_OP_CUDA_FREE = 103,
  CW_OP_CUDA_MEMCPY = 104,
  CW_OP_CUDA_MEMCPY_ASYNC = 105,
  CW_OP_CUDA_MEMCPY_2D = 106,
  CW_OP_CUDA_MEMCPY_2D_ASYNC = 107,
  CW_OP_CUDA_MEMCPY_PEER = 108,
  CW_OP_CUDA_MEMCPY_PEER_ASYNC = 109,
  CW_OP_CUDA_MEMSET = 110,
  CW_OP_CUDA_MEMSET_ASYNC = 111,
  CW_OP_CUDA_LAUNCH_KERNEL = 112,
  CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL = 113, /* __cudaLaunchKernel (<<<>>> in CUDA 13) */
  CW_OP_CUDA_LAUNCH_KERNEL_EXC = 114,
  CW_OP_CUDA_GRAPH_LAUNCH = 115,
  CW_OP_CUDA_STREAM_SYNC = 116,
  CW_OP_CUDA_DEVICE_SYNC = 117,
  CW_OP_CUDA_EVENT_SYNC = 118,
  CW_OP_CUDA_MEMCPY_ASYNC_PTSZ = 119,
  CW_OP_CUDA_LAUNCH_KERNEL_PTSZ = 120,
  CW_OP_CUDA_MEMSET_ASYNC_PTSZ = 121,
  CW_OP_CUDA_GRAPH_LAUNCH_PTSZ = 122,
  CW_OP_CUDA_STREAM_SYNC_PTSZ = 123,
  CW_OP_CUDA_MEMCPY_PTDS = 124,
  CW_OP_CUDA_STREAM_BEGIN_CAPTURE = 125,
  CW_OP_CUDA_STREAM_BEGIN_CAPTURE_PTSZ = 126,
  CW_OP_CUDA_STREAM_END_CAPTURE = 127,
  CW_OP_CUDA_STREAM_END_CAPTURE_PTSZ = 128,
  CW_OP_CUDA_GRAPH_INSTANTIATE = 129,
  CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS = 130,
  CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_PARAMS = 131,
  CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ = 132,
  CW_OP_CUDA_GRAPH_EXEC_DESTROY = 133,

  /* CUDA driver: 200..299 */
  CW_OP_CU_LAUNCH_KERNEL = 200,
  CW_OP_CU_LAUNCH_KERNEL_EX = 201,
  CW_OP_CU_MEM_ALLOC = 202,
  CW_OP_CU_MEM_FREE = 203,
  CW_OP_CU_MEM_ALLOC_MANAGED = 204,
  CW_OP_CU_MEMCPY = 205,
  CW_OP_CU_MEMCPY_ASYNC = 206,
  CW_OP_CU_MEMCPY_HTOD = 207,
  CW_OP_CU_MEMCPY_HTOD_ASYNC = 208,
  CW_OP_CU_MEMCPY_DTOH = 209,
  CW_OP_CU_MEMCPY_DTOH_ASYNC = 210,
  CW_OP_CU_MEMCPY_DTOD = 211,
  CW_OP_CU_MEMCPY_DTOD_ASYNC = 212,
  CW_OP_CU_CTX_SYNC = 213,
  CW_OP_CU_STREAM_SYNC = 214,
  CW_OP_CU_GRAPH_LAUNCH = 215,
  CW_OP_CU_STREAM_BEGIN_CAPTURE = 216,
  CW_OP_CU_STREAM_END_CAPTURE = 217,
  CW_OP_CU_GRAPH_INSTANTIATE = 218,
  CW_OP_CU_GRAPH_INSTANTIATE_WITH_FLAGS = 219,
  CW_OP_CU_GRAPH_INSTANTIATE_WITH_PARAMS = 220,
  CW_OP_CU_GRAPH_EXEC_DESTROY = 221,

  /* NCCL: 300..399 */
  CW_OP_NCCL_COMM_INIT_RANK = 300,
  CW_OP_NCCL_COMM_INIT_ALL = 301,
  CW_OP_NCCL_COMM_DESTROY = 302,
  CW_OP_NCCL_ALL_REDUCE = 303,
  CW_OP_NCCL_ALL_GATHER = 304,
  CW_OP_NCCL_REDUCE_SCATTER = 305,
  CW_OP_NCCL_BROADCAST = 306,
  CW_OP_NCCL_BCAST = 307,
  CW_OP_NCCL_REDUCE = 308,
  CW_OP_NCCL_SEND = 309,
  CW_OP_NCCL_RECV = 310,
  CW_OP_NCCL_GROUP_START = 311,
  CW_OP_NCCL_GROUP_END = 312,

  /* Host: 400..499 (sched_switch/sched_wakeup have their own records and tables) */
  CW_OP_SCHED_SWITCH = 400,
  CW_OP_SCHED_WAKEUP = 401,
  CW_OP_PROC_EXEC = 402,
  CW_OP_PROC_FORK = 403,
  CW_OP_PROC_EXIT = 404,
  /* Fast calls a thread made between two recorded calls, counted in the kernel (bpf/calls.bpf.h
   * "Aggregated calls"): one row made by the collector from the next recorded call's run fields. */
  CW_OP_CALLS_AGGREGATED = 405,

  /* I/O: 500..599 */
  CW_OP_BLOCK_RQ = 500,

  /* Network: 600..699 */
  CW_OP_TCP_RETRANSMIT = 600,  /* IPv4 (and IPv4-mapped IPv6) sockets */
  CW_OP_TCP_RETRANSMIT6 = 601, /* IPv6 sockets: addresses as two 64-bit halves each */
  CW_OP_SOCK_SEND_WAIT = 602,  /* made by the collector from socket records (requests/send_waits.h) */

  /* Memory: 700..799 */
  CW_OP_PAGE_ALLOC = 700,
  CW_OP_OOM_KILL = 701,
};

/* Record types on the ring buffers. */
enum cw_record_kind {
  CW_REC_CALL = 1,    /* struct cw_call_event */
  CW_REC_SWITCH = 2,  /* struct cw_switch_event */
  CW_REC_WAKEUP = 3,  /* struct cw_wakeup_event */
  CW_REC_PROC = 4,    /* struct cw_proc_event */
  CW_REC_HOST = 5,    /* struct cw_host_event */
  CW_REC_SOCK = 6,    /* struct cw_sock_event, on rb_sock */
  CW_REC_LISTEN = 7,  /* struct cw_listen_event: not stored, tells discovery (bpf/net.bpf.h) */
};

/* Common header: 40 bytes. ts_ns is CLOCK_MONOTONIC (bpf_ktime_get_ns); user space converts
 * to Unix ns once per session. */
struct cw_header {
  __u64 ts_ns;
  __u64 cgroup_id; /* cgroup v2 id (the inode of its folder in the cgroup2 mount); 0 in call records */
  __u32 pid; /* tgid */
  __u32 tid;
  __u32 cpu;
  __u16 op;  /* enum cw_op */
  __u8 kind; /* enum cw_record_kind */
  __u8 source; /* enum cw_source */
  __u32 flags;
  __u32 _pad0;
};

/* ---- Payloads (one struct per enum cw_record_kind). Sizes are static_asserted in
 * collector/decode.cpp; keep every field naturally aligned, padding explicit. ---- */

/* How a call's raw arguments are turned into a0..a5 (collector/decode.cpp). The BPF side
 * only copies registers, stack words and struct bytes as the attach cookie says. */
enum cw_decode {
  CW_DC_NONE = 0,
  CW_DC_ALLOC = 1,        /* (void** out, size_t bytes, ...): *out read on return */
  CW_DC_FREE = 2,         /* (void* ptr) */
  CW_DC_COPY = 3,         /* (dst, src, bytes, kind[, stream]) */
  CW_DC_COPY_2D = 4,      /* (dst, dpitch, src, spitch, width, height | kind, stream on stack) */
  CW_DC_COPY_PEER = 5,    /* (dst, dst_dev, src, src_dev, bytes[, stream]) */
  CW_DC_SET = 6,          /* (ptr, value, bytes[, stream]) */
  CW_DC_LAUNCH_RT = 7,    /* (func, dim3 grid (2 regs), dim3 block (2 regs), args | smem, stream) */
  CW_DC_LAUNCH_RT_EXC = 8,  /* (const cudaLaunchConfig_t*, func, args): config copied */
  CW_DC_LAUNCH_DRV = 9,   /* (f, gx, gy, gz, bx, by | bz, smem, stream) */
  CW_DC_LAUNCH_DRV_EX = 10, /* (const CUlaunchConfig*, f, ...): config copied */
  CW_DC_STREAM0 = 11,     /* (stream) */
  CW_DC_GRAPH_EXEC = 12,  /* (graph_exec[, stream]): graph launch, exec destroy */
  CW_DC_EVENT = 13,       /* (event) */
  CW_DC_DRV_COPY = 14,    /* (dst, src, bytes[, stream]); kind from the cookie's aux byte */
  CW_DC_CAPTURE_BEGIN = 15, /* (stream, capture mode) */
  CW_DC_CAPTURE_END = 16,   /* (stream, graph* out): *out read on return */
  CW_DC_GRAPH_INSTANTIATE = 17, /* (graph_exec* out, graph, ...): *out read on return */
  CW_DC_NCCL_INIT_RANK = 20, /* (comm* out, nranks, ncclUniqueId by value, rank) */
  CW_DC_NCCL_INIT_ALL = 21,  /* (comm* out array, ndev, devlist) */
  CW_DC_NCCL_DESTROY = 22,   /* (comm) */
  CW_DC_NCCL_REDUCE_LIKE = 23, /* AllReduce/ReduceScatter (s, r, count, dtype, redop, comm | stream) */
  CW_DC_NCCL_ALL_GATHER = 24,  /* (s, r, count, dtype, comm, stream) */
  CW_DC_NCCL_BROADCAST = 25,   /* (s, r, count, dtype, root, comm | stream) */
  CW_DC_NCCL_BCAST = 26,       /* (buf, count, dtype, root, comm, stream) */
  CW_DC_NCCL_REDUCE = 27,      /* (s, r, count, dtype, redop, root | comm, stream) */
  CW_DC_NCCL_P2P = 28,         /* (buf, count, dtype, peer, comm, stream) */
};

/* The 64-bit attach cookie of every uprobe: what the generic entry/return programs do.
 *   bits  0..15 op (enum cw_op)         16..23 decode class (enum cw_decode)
 *        24..31 aux (copy kind)         32..35 stack words to copy from sp+8 (0..4)
 *        36..39 register (1..6) holding a pointer to a 40-byte config struct to copy
 *        40..43 where the NCCL comm is: 1..6 register, 7 first stack word, 8 second
 *        44..47 NCCL role (enum cw_nccl_role)
 *        48..51 register (1..6) holding an out pointer: *(u64*)reg read on success into
 *               extra[CW_X_OUT] (allocations, capture end, graph instantiation); 0 none
 *        52..55 source (enum cw_source), from the op table (tracedb/op_catalog.cpp)
 *        56     aggregate: a fast call of this op is counted in the kernel, not sent (the op
 *               table's `recording` column, tracedb/op_recording.h; bpf/calls.bpf.h "Aggregated calls")
 * The cookies are built from the op table by collector/probe_table.cpp.
 */
enum cw_nccl_role {
  CW_NCCL_NONE = 0,
  CW_NCCL_COLL = 1,      /* collective / p2p: per-communicator sequence number += 1 */
  CW_NCCL_INIT_RANK = 2,
  CW_NCCL_INIT_ALL = 3,
  CW_NCCL_DESTROY = 4,
};
#define CW_COOKIE_OP(c) ((__u16)((c)&0xffff))
#define CW_COOKIE_CLASS(c) ((__u8)(((c) >> 16) & 0xff))
#define CW_COOKIE_AUX(c) ((__u8)(((c) >> 24) & 0xff))
#define CW_COOKIE_NSTACK(c) ((__u32)(((c) >> 32) & 0xf))
#define CW_COOKIE_STRUCT_REG(c) ((__u32)(((c) >> 36) & 0xf))
#define CW_COOKIE_COMM_LOC(c) ((__u32)(((c) >> 40) & 0xf))
#define CW_COOKIE_NCCL_ROLE(c) ((__u32)(((c) >> 44) & 0xf))
#define CW_COOKIE_OUT_REG(c) ((__u32)(((c) >> 48) & 0xf))
#define CW_COOKIE_SRC(c) ((__u8)(((c) >> 52) & 0xf))
#define CW_COOKIE_AGG(c) ((__u32)(((c) >> 56) & 0x1))

/* The aux byte: the copy kind of driver copies (cudaMemcpyKind numbering: 1 HtoD, 2 DtoH,
 * 3 DtoD, 4 default) and whether the call takes a stream argument. */
#define CW_AUX_COPY_KIND_MASK 0x0f
#define CW_AUX_STREAM 0x10

#define CW_NREGS 6
#define CW_NEXTRA 5
#define CW_STRUCT_BYTES 40 /* copied config struct: fills extra[0..4] */

/* Which extra[] slots hold what (besides stack words / config bytes):
 * NCCL: extra[2] comm hash, extra[3] rank | nranks << 32 (rank 0xffffffff = unknown),
 * extra[4] per-communicator sequence number (init: the new comm handle).
 * Out pointer (cookie bits 48..51): extra[4] the pointer or handle written through it. */
#define CW_X_COMM_HASH 2
#define CW_X_RANKS 3
#define CW_X_SEQ 4
#define CW_X_OUT 4

/* hdr.flags bits */
#define CW_F_NO_STACK 0x1
#define CW_F_SOCK_OWNER 0x2 /* TCP retransmit: pid/tid/cgroup_id are the socket's owner (bpf/net.bpf.h), not current */
#define CW_F_SOCK_TLS 0x4   /* socket record: TLS plaintext from libssl (bpf/ssl.bpf.h), not the socket's bytes */

/* CW_REC_CALL, sent on return: 192 bytes. hdr.ts_ns is the call's start.
 * The run fields say what the thread did, in traced calls the kernel only counted, between its
 * previous recorded outermost call and this one (bpf/calls.bpf.h "Aggregated calls"): how many
 * outermost calls, their total duration, when the first began and when the last returned. */
struct cw_call_event {
  struct cw_header hdr;
  __u64 dur_ns;
  __s64 ret;           /* rax on return */
  __u64 regs[CW_NREGS];  /* integer argument registers at entry: rdi rsi rdx rcx r8 r9 */
  __u64 extra[CW_NEXTRA];
  __s32 stack_id;      /* user stack in the stack map; < 0: none / failed */
  __u8 dclass;         /* enum cw_decode */
  __u8 aux;
  __u16 _pad1;
  __u64 py_stack;      /* key of the Python frames in the py_stacks map; 0: none */
  __u32 run_calls;     /* outermost calls aggregated on this thread since its last recorded one */
  __u16 run_op;        /* the op of the last of them */
  __u16 _pad2;
  __u64 run_ns;        /* their total duration */
  __u64 run_first_ns;  /* the first one's start; 0 when run_calls is 0 */
  __u64 run_last_end;  /* the last one's return */
};

/* CW_REC_SWITCH: 112 bytes. prev_state: 0 = preempted while runnable, else TASK_* bits.
 * hdr.cgroup_id is prev's cgroup (prev is current in the tracepoint), next_cgroup_id next's. */
struct cw_switch_event {
  struct cw_header hdr;
  __u32 prev_tid;
  __u32 prev_pid;
  __u32 next_tid;
  __u32 next_pid;
  __s32 prev_prio;
  __s32 next_prio;
  __s64 prev_state;
  __u64 next_cgroup_id;
  char prev_comm[16];
  char next_comm[16];
};

/* CW_REC_WAKEUP: 96 bytes. hdr.pid/tid/cgroup_id are the waker (current); tid/pid/cgroup_id
 * the woken thread. */
struct cw_wakeup_event {
  struct cw_header hdr;
  __u32 tid;
  __u32 pid;
  __s32 target_cpu;
  __u32 _pad1;
  __u64 cgroup_id; /* the woken thread's cgroup v2 id */
  char comm[16];   /* the woken thread */
  char waker_comm[16];
};

/* CW_REC_PROC: exec / fork / exit of a process: 72 bytes. hdr is the process itself (exec,
 * exit) or the forking parent thread (fork, with child_pid). */
struct cw_proc_event {
  struct cw_header hdr;
  __u32 ppid;
  __s32 exit_code;
  __u32 child_pid;
  __u32 _pad1;
  char comm[16];
};

/* CW_REC_HOST: block request, TCP retransmit, OOM kill, page-allocation aggregate: 96 bytes.
 * a[] follows the op's arg_names in tracedb/op_catalog.cpp. */
struct cw_host_event {
  struct cw_header hdr;
  __u64 dur_ns;
  __s64 a[6];
};

/* CW_REC_LISTEN: a TCP socket began listening (listen(), in the caller's context): 48 bytes.
 * hdr is the listening thread; port is the local port, 0 when listen() binds it (autobind
 * comes after the state change). Any process on the host: the collector looks only at those
 * of a traced tree or on a --http-port port (collector/session_servers.cpp). */
struct cw_listen_event {
  struct cw_header hdr;
  __u16 port;
  __u16 family;
  __u32 _pad1;
};

/* ---- Sockets of serving processes (bpf/sock.bpf.h, requests/) ---- */

/* What a socket record is. */
enum cw_sock_op {
  CW_SOCK_ACCEPT = 1, /* fd: the new connection; data: its struct cw_sock_conn, read from the kernel socket */
  CW_SOCK_READ = 2,   /* read, readv, recvfrom, recvmsg: bytes received */
  CW_SOCK_WRITE = 3,  /* write, writev, sendto, sendmsg: bytes sent (records per iovec and per piece) */
  CW_SOCK_CLOSE = 4,
  CW_SOCK_HANGUP = 5, /* just before a CW_SOCK_CLOSE: the client had left (the socket no longer
                       * ESTABLISHED at the server's close: FIN or RST received), which tells a
                       * client gone mid-response from a server that gave up (docs/INFERENCE.md "Errors") */
};

/* How a write on a traced connection went: a full send buffer (a client that does not read,
 * a lossy link) shows as EAGAIN or a short write (docs/INFERENCE.md "network"). */
enum cw_sock_send {
  CW_SEND_OK = 0,
  CW_SEND_SHORT = 1,  /* moved fewer bytes than asked (on every record of the syscall) */
  CW_SEND_EAGAIN = 2, /* moved nothing: returned -EAGAIN (a record without data, bytes 0) */
};

/* The copy of each record: enough for a request head and its x-request-id (OpenAI clients
 * send 300-700 bytes of headers), and for SSE events (a vLLM completion chunk is ~250
 * bytes). Records are reserved in three sizes so a token write or a small request head does
 * not take a full KiB of the ring. A syscall that moved more than CW_SOCK_CAP (or vectored
 * I/O: an iovec longer than that) is copied in pieces, one record per CW_SOCK_CAP bytes, up to CW_SOCK_MAX_COPY bytes
 * in all; the rest goes in one record without data (docs/INFERENCE.md "Capture limits"). */
#define CW_SOCK_CAP 1024
#define CW_SOCK_CAP_SMALL 384
#define CW_SOCK_CAP_TINY 128 /* a client's GET head, a small response: 216-byte records */
#define CW_SOCK_MAX_COPY (64 << 10)

/* A connection's identity, read from the kernel's socket (fd → file → socket → sock), never
 * from the server's buffers: libuv and Go accept with a NULL sockaddr. Addresses in network
 * order (IPv4: the first 4 bytes; an IPv4-mapped IPv6 address comes as IPv4); ports in host
 * order. The data of an accept record. */
struct cw_sock_conn {
  __u32 netns;        /* the socket's network namespace (inode, as /proc/PID/ns/net) */
  __u16 family;       /* AF_INET / AF_INET6; 0: the fd was not a TCP socket */
  __u16 local_port;   /* the server's */
  __u16 peer_port;    /* the client's */
  __u8 adopted;       /* 1: first seen at a read or write (accepted before the trace, or its accept lost) */
  __u8 _pad;
  __u8 local_addr[16];
  __u8 peer_addr[16];
};

/* A port a serving process listens on, in its network namespace (bpf/sock.bpf.h sock_listen). */
struct cw_listen_key {
  __u32 netns;
  __u16 port;
  __u16 _pad;
};

/* CW_REC_SOCK: 88 bytes + `captured` bytes of data (an accept: sizeof(struct cw_sock_conn)).
 * hdr.ts_ns is the syscall's exit. */
struct cw_sock_event {
  struct cw_header hdr;
  __s64 bytes;      /* what this record stands for: the syscall's bytes from `offset` on, up to
                     * the next record's offset (all of them when it is the only record) */
  __s32 fd;
  __u16 captured;   /* bytes of data[] copied: min(bytes, capacity of the record) */
  __u8 sock_op;     /* enum cw_sock_op */
  __u8 send;        /* writes: enum cw_sock_send */
  union {
    struct {
      __u64 enter_ns; /* reads and writes: the syscall's entry, on hdr.ts_ns's clock */
      __u64 offset;   /* reads and writes: where this record's bytes start in the syscall's */
      __u64 total;    /* reads and writes: all the syscall moved (a lost last piece shows) */
      /* Reads: how long before hdr.ts_ns the kernel received the first and the last byte
       * the read took (bpf/arrival.bpf.h), in µs rounded up; 0 = not known (the read time
       * stands for the arrival). */
      __u32 arrive_first_us;
      __u32 arrive_last_us;
    };
    __u8 _union[32];  /* all of it, zeroed at once */
  };
  char data[CW_SOCK_CAP];
};
#define CW_SOCK_HDR_BYTES 88

/* Key of the stack_thresholds map: user space sets, per (process, op), the duration from
 * which a call's user stack is taken (bpf/calls.bpf.h "User stacks"). */
struct cw_stack_key {
  __u32 pid; /* tgid */
  __u16 op;  /* enum cw_op */
  __u16 _pad;
};

/* ---- CPython frames (bpf/python.bpf.h, collector/python_runtime.cpp) ---- */

/* Where the walk starts and the struct offsets it needs, per traced CPython process: filled by
 * the collector from its version table (docs/COLLECTOR.md "Python frames"). Offsets are bytes;
 * CW_PY_NONE marks a field the version does not have. */
#define CW_PY_NONE 0xffff
struct cw_py_proc {
  __u64 runtime;          /* address of _PyRuntime in the process */
  __u16 interp_head;      /* _PyRuntimeState.interpreters.head */
  __u16 threads_head;     /* PyInterpreterState.threads.head (3.10: tstate_head) */
  __u16 ts_next;          /* PyThreadState.next */
  __u16 ts_thread_id;     /* PyThreadState.thread_id (pthread_self(): the thread's fs base) */
  __u16 ts_frame;         /* 3.10 frame, 3.11/3.12 cframe, 3.13 current_frame */
  __u16 cframe_frame;     /* _PyCFrame.current_frame (3.11/3.12), else CW_PY_NONE */
  __u16 fr_previous;      /* frame → caller frame */
  __u16 fr_code;          /* frame → code object */
  __u16 fr_instr;         /* 3.10 f_lasti (int), 3.11/3.12 prev_instr, 3.13 instr_ptr */
  __u16 fr_owner;         /* _PyInterpreterFrame.owner (3.12+: 3 = C-stack shim), else CW_PY_NONE */
  __u8 instr_is_int;      /* 3.10: f_lasti is a 32-bit index, not a pointer */
  __u8 _pad[3];
};

/* One Python stack, innermost first: code object and instruction (pointer, or 3.10 index). */
#define CW_PY_DEPTH 32
struct cw_py_stack {
  __u32 depth;
  __u32 _pad;
  __u64 code[CW_PY_DEPTH];
  __u64 instr[CW_PY_DEPTH];
};

/* Per-CPU counters of everything the BPF side could not record (collector_stats). */
enum cw_drop {
  CW_DROP_RING_CALL = 0,     /* call ring full: bpf_ringbuf_reserve failed */
  CW_DROP_RING_HOST = 1,     /* host ring full */
  CW_DROP_DEPTH = 2,         /* nesting deeper than CW_MAX_DEPTH on one thread */
  CW_DROP_UNPAIRED = 3,      /* a recorded entry that never returned (longjmp, exception): its frame dropped */
  CW_DROP_SLOT = 4,          /* the thread's pairing slot was busy with another live thread */
  CW_DROP_STACK = 5,         /* bpf_get_stackid failed (event kept, no stack) */
  CW_DROP_BLOCK_MAP = 6,     /* in-flight block request map full */
  CW_DROP_PAGE_MAP = 7,      /* page-alloc aggregation map full */
  CW_DROP_NCCL_MAP = 8,      /* communicator map full */
  CW_DROP_TRACED_MAP = 9,    /* traced-process map full */
  CW_DROP_RING_SOCK = 10,    /* socket ring full (bpf/sock.bpf.h) */
  CW_DROP_SOCK_CONN_MAP = 11, /* accepted-connection or syscall-argument map full */
  /* Not a loss: connections of causeway's own /metrics scraper that a traced server accepted,
   * not traced (bpf/sock.bpf.h own_conns); collector_stats http_own_scrapes_excluded. */
  CW_COUNT_OWN_SCRAPE = 12,
  CW_DROP_AGG_MAP = 13,      /* aggregation map full: the fast call was recorded instead (a cost, not a loss) */
  CW_DROP__COUNT = 14,
};

/* What the TLS plaintext hook did, and everything it could not record (collector_stats
 * http_tls_*, collector/ssl_attach.h ssl_stat_name; bpf/sock.bpf.h ssl_stats, per CPU). */
enum cw_ssl_stat {
  CW_SSL_STAT_PLAINTEXT = 0,  /* SSL calls whose plaintext was recorded */
  CW_SSL_STAT_NO_CONN = 1,    /* plaintext with no connection known for it (no SSL_set_fd, no read on
                               * the thread before it): not recorded */
  CW_SSL_STAT_UNTRACED = 2,   /* plaintext of a connection not traced (the server's own TLS client
                               * connections, one accepted before the trace off a listened port) */
  CW_SSL_STAT_ARGS_LOST = 3,  /* an SSL call's entry not matched by its return (the in-flight map full,
                               * or an entry overwritten by another on its thread): its plaintext lost */
  CW_SSL_STAT_REBOUND = 4,    /* an SSL object's plaintext went to another connection than its last
                               * (a memory BIO read on a thread that last read another socket) */
  CW_SSL_STAT_CIPHER_SKIPPED = 5, /* socket calls on TLS-read connections not copied (their cipher bytes) */
  CW_SSL_STAT_ARRIVAL = 6,    /* plaintext reads given the arrival of their unrecorded cipher bytes */
  CW_SSL_STAT__COUNT = 7,
};

/* Page allocations aggregated in the kernel per process (drained each second). */
struct cw_page_agg {
  __u64 pages;
  __u64 calls;
  __u32 max_order;
  __u32 _pad1;
};

/* Fast calls counted in the kernel per (process, op) (bpf/calls.bpf.h "Aggregated calls"),
 * per CPU, read by the collector each second and at stop into the rollups. The histogram has
 * the trace DB's own buckets (tracedb/histogram.h: exact below 128 ns, then 128 sub-buckets per
 * power of two), up to CW_AGG_MAX_NS: a call as slow as that is always recorded. */
#define CW_AGG_MAX_NS (1ULL << 20)
#define CW_AGG_BUCKETS 1792 /* bucket_of(CW_AGG_MAX_NS - 1) + 1 */
/* tracedb/histogram.h LatencyHistogram::bucket_of for v < CW_AGG_MAX_NS, in plain C for the BPF
 * side (no loop, no builtin); tests/unit/test_call_agg.cpp checks that both agree. */
static inline __u32 cw_agg_bucket(__u64 v) {
  if (v < 128) return (__u32)v;
  __u32 x = (__u32)v, k = 0;
  if (x >> 16) { x >>= 16; k += 16; }
  if (x >> 8) { x >>= 8; k += 8; }
  if (x >> 4) { x >>= 4; k += 4; }
  if (x >> 2) { x >>= 2; k += 2; }
  if (x >> 1) k += 1;
  __u32 b = 128 + (k - 7) * 128 + (__u32)((v >> (k - 7)) - 128);
  return b < CW_AGG_BUCKETS ? b : CW_AGG_BUCKETS - 1;
}
/* A thread's run: the outermost calls it counted since its last recorded one. Kept per pairing
 * slot in the `runs` array; taken into the thread's next recorded outermost call (the run_*
 * fields above), and read by the collector at stop for the runs no later call closed. */
struct cw_run {
  __u32 tid;
  __u32 pid;
  __u32 calls;
  __u16 op; /* the last one's */
  __u16 _pad;
  __u64 ns; /* their total duration */
  __u64 first_ns;
  __u64 last_end;
};
struct cw_agg_key {
  __u32 pid; /* tgid */
  __u16 op;
  __u16 _pad;
};
struct cw_agg_value {
  __u64 count;
  __u64 errors;
  __u64 sum_ns;
  __u64 min_ns;
  __u64 max_ns;
  __u64 first_ns; /* start of the first call counted (CLOCK_MONOTONIC) */
  __u64 last_ns;  /* start of the last */
  __u64 hist[CW_AGG_BUCKETS];
};

/* NCCL communicator known to the BPF side (keyed by comm handle). */
struct cw_comm_info {
  __u64 hash;   /* of the full 128-byte ncclUniqueId (FNV-1a over 16 words) */
  __u32 rank;
  __u32 nranks;
  __u64 seq;
};

#endif /* CAUSEWAY_EVENTS_H */
