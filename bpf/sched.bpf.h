/* Context switches and wake-ups touching a traced process: what makes per-thread off-CPU
 * intervals exact (who ran instead, runnable vs sleeping, who woke the thread). */
#pragma once

#include "calls.bpf.h"
#include "maps.bpf.h"
#include "sched_watch.bpf.h" /* while a traced thread waits for a CPU, every switch there is recorded */

/* A task's cgroup v2 id, the value bpf_get_current_cgroup_id() gives for current: the id of
 * its kernfs node, which is also the inode number of the cgroup's folder (how user space maps
 * it to a path, collector/cgroup_resolver.h). Four dependent reads, no lock: css_set and
 * cgroup are RCU-freed, and the tracepoints run under RCU. */
static __always_inline __u64 task_cgroup_id(struct task_struct *t) { return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id); }

/* raw_tp/sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...) */
SEC("raw_tp/sched_switch")
int cw_sched_switch(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  bool preempt = (bool)ctx->args[0];
  struct task_struct *prev = (struct task_struct *)ctx->args[1];
  struct task_struct *next = (struct task_struct *)ctx->args[2];
  __u32 prev_pid = BPF_CORE_READ(prev, tgid);
  __u32 next_pid = BPF_CORE_READ(next, tgid);
  /* As 0/1 values: without the barriers clang tests `!a && !b` as one OR of the two map
   * pointers, which the verifier refuses ("pointer |= pointer prohibited"). */
  bool prev_traced = is_traced(prev_pid), next_traced = is_traced(next_pid);
  barrier_var(prev_traced);
  barrier_var(next_traced);
  if (prev_traced) mark_switched_out(); /* its open calls become rows (bpf/calls.bpf.h) */
  __u32 cpu = bpf_get_smp_processor_id();
  struct cw_cpu_watch *watch = bpf_map_lookup_elem(&sched_watch, &cpu);
  bool watched = watch && watch->waiters > 0;
  barrier_var(watched);
  if (!prev_traced && !next_traced && !watched) return 0;  /* the common case: one array lookup more */
  const __u64 now = bpf_ktime_get_ns();
  watched = sched_watch_switch(watch, cpu, prev, next, prev_traced, preempt, now);
  if (!prev_traced && !next_traced && !watched) return 0;

  struct cw_switch_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, now, CW_OP_SCHED_SWITCH, CW_REC_SWITCH, CW_SRC_HOST);
  e->prev_tid = BPF_CORE_READ(prev, pid);
  e->prev_pid = prev_pid;
  e->next_tid = BPF_CORE_READ(next, pid);
  e->next_pid = next_pid;
  e->prev_prio = BPF_CORE_READ(prev, prio);
  e->next_prio = BPF_CORE_READ(next, prio);
  /* A preempted task may already have set a sleeping state; it is still runnable. */
  e->prev_state = preempt ? 0 : (BPF_CORE_READ(prev, __state) & 0xff);
  /* The task that runs instead is often not traced (the noisy neighbour): its cgroup is read
   * now, since it may be gone before user space could look it up in /proc. */
  e->next_cgroup_id = task_cgroup_id(next);
  BPF_CORE_READ_STR_INTO(&e->prev_comm, prev, comm);
  BPF_CORE_READ_STR_INTO(&e->next_comm, next, comm);
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}

/* raw_tp/sched_waking(struct task_struct *p), in try_to_wake_up(): current is the waker.
 * Not sched_wakeup: when the wakee's CPU is idle (or in another LLC) the activation is queued
 * to that CPU and sched_wakeup fires there, from its idle task or IPI, so "current" would be
 * pid 0 instead of the thread that released the lock. sched_wakeup_new runs in the parent. */
static __always_inline int on_wakeup(struct task_struct *p) {
  if (cw_stopped) return 0;
  __u32 pid = BPF_CORE_READ(p, tgid);
  if (!is_traced(pid)) return 0;
  struct cw_wakeup_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), CW_OP_SCHED_WAKEUP, CW_REC_WAKEUP, CW_SRC_HOST);
  e->tid = BPF_CORE_READ(p, pid);
  e->pid = pid;
  e->target_cpu = BPF_CORE_READ(p, wake_cpu);
  e->_pad1 = 0;
  sched_wait_begin(e->tid, e->target_cpu, e->hdr.ts_ns);
  e->cgroup_id = task_cgroup_id(p);
  BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
  bpf_get_current_comm(e->waker_comm, sizeof(e->waker_comm));
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}

SEC("raw_tp/sched_waking")
int cw_sched_wakeup(struct bpf_raw_tracepoint_args *ctx) { return on_wakeup((struct task_struct *)ctx->args[0]); }

SEC("raw_tp/sched_wakeup_new")
int cw_sched_wakeup_new(struct bpf_raw_tracepoint_args *ctx) {
  return on_wakeup((struct task_struct *)ctx->args[0]);
}
