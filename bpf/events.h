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
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int32_t __s32;
typedef int64_t __s64;
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

  /* I/O: 500..599 */
  CW_OP_BLOCK_RQ = 500,

  /* Network: 600..699 */
  CW_OP_TCP_RETRANSMIT = 600,

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
};

/* Common header: 40 bytes. ts_ns is CLOCK_MONOTONIC (bpf_ktime_get_ns); user space converts
 * to Unix ns once per session. */
struct cw_header {
  __u64 ts_ns;
  __u64 cgroup_id;
  __u32 pid; /* tgid */
  __u32 tid;
  __u32 cpu;
  __u16 op;  /* enum cw_op */
  __u8 kind; /* enum cw_record_kind */
  __u8 source; /* enum cw_source */
  __u32 flags;
  __u32 _pad0;
};

#endif /* CAUSEWAY_EVENTS_H */
