/* Maps and tunables shared by every causeway BPF unit (kernel side only). */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "events.h"

/* libbpf 1.1's bpf_tracing.h stops at the fifth argument register. */
#ifndef PT_REGS_PARM6
#if defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#elif defined(__TARGET_ARCH_arm64)
#define PT_REGS_PARM6(x) (((const struct user_pt_regs *)(x))->regs[5])
#endif
#endif

/* Tunables, set by collector/loader.cpp before load. */
const volatile bool targ_filter = false;   /* trace only tgids in `traced` (--pid) */
const volatile bool targ_stacks = true;    /* user stacks where they explain something (calls.bpf.h) */
/* Submit without waking the consumer until this much is queued: a wake-up per event costs
 * ≈ 2 µs on the producer (3.4 vs 1.37 µs per traced call); the consumer also polls on a
 * 10 ms timer, so latency is bounded either way. */
const volatile __u64 targ_wake_calls = 1 << 20;
const volatile __u64 targ_wake_host = 1 << 19;

/* Set by the collector when it stops: new calls and host events are ignored, returns of calls
 * already entered still complete, so the final drain is exact without waiting for the (slow,
 * RCU-synchronised) detach of every uprobe. */
volatile bool cw_stopped = false;

/* Calls: 192-byte records (200 with the ring's header). 500k recorded calls/s = 100 MB/s (--record-all;
 * by default fast launches are only counted, bpf/calls.bpf.h "Aggregated calls"); the consumer
 * drains every 10 ms (0.8 MB) or when a quarter is queued, so 4 MiB rides out ~50 ms consumer
 * stalls. Longer backlogs wait in the writer's queue (104 B a row), not here: user space
 * maps the ring's data twice, so each ring byte costs two bytes of the collector's RSS.
 * User space sets the size (collector/bpf_loader.h); this is the default. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 << 20);
} rb_calls SEC(".maps");

/* Host events (sched, wakeups, process, block, net, mem) go to their own ring so a burst of
 * context switches never costs a CUDA call record. ~100 B × 200k/s = 20 MB/s → 2 MiB is
 * 100 ms of them. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 2 << 20);
} rb_host SEC(".maps");

/* Processes whose maps user space has not snapshotted yet: on a process's first traced call
 * its pid goes here, read by a thread of its own (collector/early_maps.h) that reads
 * /proc/PID/maps at once — a process living a few ms may be gone before the drain gets to its
 * records, and without its maps none of its stacks can be symbolized. 4-byte records. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 << 10);
} rb_new_procs SEC(".maps");

/* Processes already announced on rb_new_procs (tgid → 1); exec forgets (new maps). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} announced SEC(".maps");

/* Processes being traced (tgid → 1). Filled by the uprobe path on a thread's first call, by
 * discovery (maps containing the libraries), --pid, and fork of a traced process. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} traced SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, CW_DROP__COUNT);
  __type(key, __u32);
  __type(value, __u64);
} drops SEC(".maps");

/* User stacks, deduplicated by the kernel: 16384 ids × (32 frames × 8 B) ≈ 4 MiB. */
#define CW_STACK_DEPTH 32
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 16384);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, CW_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

static __always_inline void count_drop(__u32 reason) {
  __u64 *c = bpf_map_lookup_elem(&drops, &reason);
  if (c) *c += 1;
}

static __always_inline bool is_traced(__u32 tgid) { return bpf_map_lookup_elem(&traced, &tgid) != 0; }

/* True when tgid was not traced before (its first traced call, or a fork). */
static __always_inline bool mark_traced(__u32 tgid) {
  __u8 one = 1;
  long err = bpf_map_update_elem(&traced, &tgid, &one, BPF_NOEXIST);
  if (err == -7 /* -E2BIG: full */) count_drop(CW_DROP_TRACED_MAP);
  return err == 0;
}

/* Announces tgid on rb_new_procs once (per exec image). Called on a thread's first call only. */
static __always_inline void announce_process(__u32 tgid) {
  __u8 one = 1;
  if (bpf_map_update_elem(&announced, &tgid, &one, BPF_NOEXIST) != 0) return;
  __u32 *e = bpf_ringbuf_reserve(&rb_new_procs, sizeof(*e), 0);
  if (!e) return; /* the drain's own snapshot is the fallback */
  *e = tgid;
  bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* Per-CPU wake-up state. The fill level is queried on every 64th submit only, because
 * bpf_ringbuf_query reads the consumer position, a cache line the consumer's CPU keeps
 * writing (a cross-core miss per event otherwise). 64 records ≪ any wake threshold. A wake-up
 * is forced at most once per consumer position: a consumer woken and not yet run (a busy
 * host) gains nothing from another one, and each costs the producer an irq_work (a self-IPI,
 * a VM exit under virtualization) — every 64th call, for as long as the consumer is starved. */
struct cw_wake_state {
  __u64 submits;
  __u64 forced_cons[2]; /* 1 + the consumer position at the last forced wake-up: calls, host */
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cw_wake_state);
} submits SEC(".maps");

static __always_inline __u64 wake_flag(void *rb, __u64 threshold) {
  __u32 zero = 0;
  struct cw_wake_state *w = bpf_map_lookup_elem(&submits, &zero);
  if (!w || (w->submits++ & 63) != 0) return BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) < threshold) return BPF_RB_NO_WAKEUP;
  __u64 cons = bpf_ringbuf_query(rb, BPF_RB_CONS_POS) + 1;
  __u64 *forced = &w->forced_cons[rb == (void *)&rb_calls ? 0 : 1];
  if (*forced == cons) return BPF_RB_NO_WAKEUP;
  *forced = cons;
  return BPF_RB_FORCE_WAKEUP;
}

/* id: bpf_get_current_pid_tgid(), which the caller already has. */
static __always_inline void fill_header_nocg(struct cw_header *h, __u64 id, __u64 ts, __u16 op, __u8 kind, __u8 source) {
  h->ts_ns = ts;
  h->cgroup_id = 0;
  h->pid = id >> 32;
  h->tid = (__u32)id;
  h->cpu = bpf_get_smp_processor_id();
  h->op = op;
  h->kind = kind;
  h->source = source;
  h->flags = 0;
  h->_pad0 = 0;
}

static __always_inline void fill_header(struct cw_header *h, __u64 ts, __u16 op, __u8 kind, __u8 source) {
  fill_header_nocg(h, bpf_get_current_pid_tgid(), ts, op, kind, source);
  h->cgroup_id = bpf_get_current_cgroup_id();
}
