/* Which CPUs have a traced thread waiting to run (docs/DIAGNOSIS.md "cpu_contention"): while
 * one does, every switch on that CPU is recorded (bpf/sched.bpf.h), so the time the thread
 * waited goes to whoever held the CPU meanwhile — a hog that takes the CPU from others and
 * never hands it to the traced thread directly included.
 *
 * Several traced threads may wait on one CPU at once (a server's threads pinned together), and
 * one running must not end the others' watch: each CPU counts its waiters, and each waiting
 * thread remembers the CPU it was counted on, so its switch-in ends exactly its own wait
 * wherever it runs. A wait begins when a traced thread is preempted (still runnable) or woken
 * (for the CPU it last ran on: wake_cpu at sched_waking), moves with the thread when the
 * scheduler places it on another CPU (at that wake-up, or by load balancing:
 * sched_migrate_task), and ends when that thread is switched in, or leaves a CPU asleep or
 * dead. A count that an unseen event left standing (a program run the kernel skipped) is
 * dropped 2 s after the CPU's latest wait began (`epoch` then voids the waits counted
 * before). */
#pragma once

#include "maps.bpf.h"

#define CW_SCHED_WATCH_CPUS 1024
#define CW_SCHED_WATCH_NS 2000000000ULL
#define CW_SCHED_WAITING_THREADS 16384

struct cw_cpu_watch {
  __s32 waiters; /* traced threads counted as waiting for this CPU (changed by other CPUs too: atomic) */
  __u32 epoch;   /* bumped when the 2 s backstop drops the count */
  __u64 since;   /* ktime the latest of those waits began */
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, CW_SCHED_WATCH_CPUS);
  __type(key, __u32);
  __type(value, struct cw_cpu_watch);
} sched_watch SEC(".maps");

struct cw_thread_wait {
  __u32 cpu;   /* the CPU whose count holds this wait */
  __u32 epoch; /* that CPU's epoch when it was counted */
};

/* Waiting traced threads (tid → where counted). LRU: an entry whose end was never seen cannot
 * fill the map; its CPU's count is dropped by the backstop. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, CW_SCHED_WAITING_THREADS);
  __type(key, __u32);
  __type(value, struct cw_thread_wait);
} sched_waiting SEC(".maps");

/* The wait of `tid` (if one is counted) is over. Only the caller whose delete succeeds takes
 * it off the count, so two CPUs ending the same wait at once do not both. */
static __always_inline void sched_wait_end(__u32 tid) {
  struct cw_thread_wait *t = bpf_map_lookup_elem(&sched_waiting, &tid);
  if (!t) return;
  __u32 cpu = t->cpu;
  const __u32 epoch = t->epoch;
  if (bpf_map_delete_elem(&sched_waiting, &tid) != 0) return;
  struct cw_cpu_watch *w = bpf_map_lookup_elem(&sched_watch, &cpu);
  if (w && w->epoch == epoch) __sync_fetch_and_add(&w->waiters, -1);
}

/* `tid` waits for `cpu` from `now` on. */
static __always_inline void sched_wait_begin(__u32 tid, __u32 cpu, __u64 now) {
  struct cw_cpu_watch *w = bpf_map_lookup_elem(&sched_watch, &cpu);
  if (!w) return;
  struct cw_thread_wait *t = bpf_map_lookup_elem(&sched_waiting, &tid);
  if (!t || t->cpu != cpu || t->epoch != w->epoch) {
    /* Counted on another CPU (or before the backstop): moved here. With no entry (the common
     * case) there is nothing to end, and no second lookup. */
    if (t) sched_wait_end(tid);
    struct cw_thread_wait v = {.cpu = cpu, .epoch = w->epoch};
    if (bpf_map_update_elem(&sched_waiting, &tid, &v, BPF_NOEXIST) == 0) __sync_fetch_and_add(&w->waiters, 1);
  }
  w->since = now;
}

/* A switch on `cpu` (whose watch is `w`) at `now`: next's wait ends (traced or not: a thread
 * may stop being traced while it waits), prev begins one (still runnable: preempted in the
 * kernel, or a busy user thread switched out at the tick with TASK_RUNNING and preempt false)
 * or ends its own (asleep or dead). True while a traced thread still waits here: the switch is
 * recorded whoever its tasks are. */
static __always_inline bool sched_watch_switch(struct cw_cpu_watch *w, __u32 cpu, struct task_struct *prev,
                                               struct task_struct *next, bool prev_traced, bool preempt, __u64 now) {
  if (!w) return false;
  const __u32 next_tid = next->pid;
  if (next_tid) sched_wait_end(next_tid); /* 0: this CPU's idle task */
  if (prev_traced) {
    const __u32 prev_tid = prev->pid;
    if (preempt || !(prev->__state & 0xff)) sched_wait_begin(prev_tid, cpu, now);
    else sched_wait_end(prev_tid);
  }
  if (w->waiters <= 0) return false;
  if (now - w->since >= CW_SCHED_WATCH_NS) { /* a wait seen to start and never to end */
    w->waiters = 0;
    w->epoch++;
    return false;
  }
  return true;
}

/* The CPU `p` is on: task_cpu(p). x86-64 and arm64 kernels since 5.16 keep it in thread_info,
 * older ones (and configs without THREAD_INFO_IN_TASK's field) in task_struct. */
struct task_struct___cw_cpu_in_task {
  unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 sched_task_cpu(struct task_struct *p) {
  if (bpf_core_field_exists(p->thread_info.cpu)) return p->thread_info.cpu;
  return ((struct task_struct___cw_cpu_in_task *)p)->cpu;
}

/* tp_btf/sched_migrate_task(struct task_struct *p, int dest_cpu), in set_task_cpu before the
 * move: a waiting traced thread placed on another CPU than it last ran on (the scheduler picks
 * the CPU after sched_waking) or pulled there by load balancing now waits there, so its wait
 * is counted there. Where its wait is counted now: a wait begun at a wake-up on the CPU
 * `wake_cpu` named then (still unchanged: set_task_cpu changes it after this tracepoint), a
 * wait begun when it was preempted on task_cpu(p), the CPU it leaves. The two differ only when
 * NUMA balancing chose a CPU for the sleeping task's next wake-up (migrate_swap sets only
 * wake_cpu): then both CPUs are looked at. When neither has a waiter (the common case: the two
 * are the same CPU) this is one array lookup. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(cw_sched_migrate, struct task_struct *p, int dest_cpu) {
  if (cw_stopped) return 0;
  const __u32 dest = (__u32)dest_cpu;
  __u32 from = sched_task_cpu(p);
  const __u32 woken_for = p->wake_cpu;
  struct cw_cpu_watch *w = bpf_map_lookup_elem(&sched_watch, &from);
  bool waiting = w && w->waiters > 0;
  if (!waiting && woken_for != from) {
    w = bpf_map_lookup_elem(&sched_watch, &woken_for);
    waiting = w && w->waiters > 0;
  }
  if (!waiting) return 0;
  __u32 tid = p->pid;
  struct cw_thread_wait *t = bpf_map_lookup_elem(&sched_waiting, &tid);
  if (t && t->cpu != dest) sched_wait_begin(tid, dest, bpf_ktime_get_ns());
  return 0;
}
