/* Context switches and wake-ups touching a traced process: what makes per-thread off-CPU
 * intervals exact (who ran instead, runnable vs sleeping, who woke the thread). */
#pragma once

#include "calls.bpf.h"
#include "maps.bpf.h"

/* A task's cgroup v2 id, the value bpf_get_current_cgroup_id() gives for current: the id of
 * its kernfs node, which is also the inode number of the cgroup's folder (how user space maps
 * it to a path, collector/cgroup_resolver.h). Four dependent reads, no lock: css_set and
 * cgroup are RCU-freed, and the tracepoints run under RCU. */
static __always_inline __u64 task_cgroup_id(struct task_struct *t) { return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id); }

/* Who ran while a traced thread waited (docs/DIAGNOSIS.md "cpu_contention"): per CPU, when a
 * traced thread became runnable there (preempted, or woken for it) and has not run since, every
 * switch on that CPU is recorded too, for up to CW_SCHED_WATCH_NS. Without them the whole wait
 * goes to whoever ran last before the thread got back in (on a busy host, any short task),
 * never to a hog that held the CPU for most of it but did not hand it over. Set from the
 * waking CPU for the wakee's CPU (task_cpu at sched_waking: where it last ran), cleared when a
 * traced thread is switched in there or leaves it asleep. */
#define CW_SCHED_WATCH_CPUS 1024
#define CW_SCHED_WATCH_NS 2000000000ULL
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, CW_SCHED_WATCH_CPUS);
  __type(key, __u32);
  __type(value, __u64); /* ktime a traced thread began to wait here; 0: none waiting */
} sched_watch SEC(".maps");

static __always_inline void sched_watch_set(__u32 cpu, __u64 now) {
  __u64 *w = bpf_map_lookup_elem(&sched_watch, &cpu);
  if (w) *w = now;
}

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
  __u64 *watch = bpf_map_lookup_elem(&sched_watch, &cpu);
  const __u64 since = watch ? *watch : 0;
  if (!prev_traced && !next_traced && !since) return 0;  /* the common case: one array lookup more */
  const __u64 now = bpf_ktime_get_ns();
  if (watch) {
    if (next_traced) *watch = 0;
    /* Still runnable: preempted in the kernel, or (a busy user thread at the tick) switched
     * out on its way back to user space with its state TASK_RUNNING and preempt false. A
     * traced thread leaving the CPU asleep (or dead) ends any wait marked here too. */
    if (prev_traced) *watch = preempt || !(BPF_CORE_READ(prev, __state) & 0xff) ? now : 0;
  }
  if (!prev_traced && !next_traced && now - since >= CW_SCHED_WATCH_NS) {
    if (watch) *watch = 0;  /* a wait seen to start and never to end (the thread exited) */
    return 0;
  }

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
  sched_watch_set(e->target_cpu, e->hdr.ts_ns);
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
