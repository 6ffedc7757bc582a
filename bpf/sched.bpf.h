/* Context switches and wake-ups touching a traced process: what makes per-thread off-CPU
 * intervals exact (who ran instead, runnable vs sleeping, who woke the thread). */
#pragma once

#include "calls.bpf.h"
#include "maps.bpf.h"
#include "sched_watch.bpf.h" /* while a traced thread waits for a CPU, every switch there is recorded */

/* The scheduler hooks are BTF tracepoints (tp_btf): their task pointers are typed, so a field
 * is one load, where a raw tracepoint pays a bpf_probe_read_kernel call per field (measured,
 * bench/sched_hook_cost: docs/BENCHMARKS.md "The scheduler hooks' cost, round 10"). The fields
 * are still CO-RE relocated (vmlinux.h's preserve_access_index). */

/* A task's cgroup v2 id, the value bpf_get_current_cgroup_id() gives for current: the id of
 * its kernfs node, which is also the inode number of the cgroup's folder (how user space maps
 * it to a path, collector/cgroup_resolver.h). Four dependent loads, no lock: css_set and
 * cgroup are RCU-freed, and the tracepoints run under RCU. */
static __always_inline __u64 task_cgroup_id(struct task_struct *t) { return t->cgroups->dfl_cgrp->kn->id; }

/* A task's comm (16 bytes, NUL-terminated; user space reads up to the NUL) in one fixed-size
 * copy: the string-copy helper walks it byte by byte. Not as two direct 8-byte loads: 6.18's
 * verifier takes them, older ones refuse a load wider than a char array's element ("access
 * beyond the end of member"). */
static __always_inline void copy_comm(char dst[16], struct task_struct *t) {
  bpf_probe_read_kernel(dst, 16, t->comm);
}

/* tp_btf/sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...).
 * It runs at every context switch of the host: the untraced case (neither task traced, no
 * traced thread waiting for this CPU) is two tgid loads, the `traced` lookup of prev and of
 * next and one array lookup. */
SEC("tp_btf/sched_switch")
int BPF_PROG(cw_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  if (cw_stopped) return 0;
  const __u32 prev_pid = prev->tgid, next_pid = next->tgid;
  /* As 0/1 values: without the barriers clang tests `!a && !b` as one OR of the two map
   * pointers, which the verifier refuses ("pointer |= pointer prohibited"). */
  bool prev_traced = is_traced(prev_pid);
  barrier_var(prev_traced);
  if (prev_traced) mark_switched_out(); /* its open calls become rows (bpf/calls.bpf.h) */
  __u32 cpu = bpf_get_smp_processor_id();
  struct cw_cpu_watch *watch = bpf_map_lookup_elem(&sched_watch, &cpu);
  bool watched = watch && watch->waiters > 0;
  barrier_var(watched);
  /* next's lookup only when neither answers already: the common case still needs it. */
  bool next_traced = !prev_traced && !watched && is_traced(next_pid);
  barrier_var(next_traced);
  if (!prev_traced && !next_traced && !watched) return 0;
  const __u64 now = bpf_ktime_get_ns();
  watched = sched_watch_switch(watch, cpu, prev, next, prev_traced, preempt, now);
  if (!prev_traced && !watched) {
    /* next's wait may just have ended the watch: the switch is still recorded if next is traced. */
    next_traced = next_traced || is_traced(next_pid);
    barrier_var(next_traced);
    if (!next_traced) return 0;
  }

  struct cw_switch_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  const __u32 prev_tid = prev->pid;
  /* prev is current here: the header is prev's (what bpf_get_current_pid_tgid and
   * bpf_get_current_cgroup_id would give, loaded directly). */
  fill_header_nocg(&e->hdr, ((__u64)prev_pid << 32) | prev_tid, now, CW_OP_SCHED_SWITCH, CW_REC_SWITCH, CW_SRC_HOST);
  e->hdr.cgroup_id = task_cgroup_id(prev);
  e->prev_tid = prev_tid;
  e->prev_pid = prev_pid;
  e->next_tid = next->pid;
  e->next_pid = next_pid;
  e->prev_prio = prev->prio;
  e->next_prio = next->prio;
  /* A preempted task may already have set a sleeping state; it is still runnable. */
  e->prev_state = preempt ? 0 : (prev->__state & 0xff);
  /* The task that runs instead is often not traced (the noisy neighbour): its cgroup is read
   * now, since it may be gone before user space could look it up in /proc. */
  e->next_cgroup_id = task_cgroup_id(next);
  copy_comm(e->prev_comm, prev);
  copy_comm(e->next_comm, next);
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}

/* tp_btf/sched_waking(struct task_struct *p), in try_to_wake_up(): current is the waker.
 * Not sched_wakeup: when the wakee's CPU is idle (or in another LLC) the activation is queued
 * to that CPU and sched_wakeup fires there, from its idle task or IPI, so "current" would be
 * pid 0 instead of the thread that released the lock. sched_wakeup_new runs in the parent. */
static __always_inline int on_wakeup(struct task_struct *p) {
  if (cw_stopped) return 0;
  const __u32 pid = p->tgid;
  if (!is_traced(pid)) return 0;
  struct cw_wakeup_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), CW_OP_SCHED_WAKEUP, CW_REC_WAKEUP, CW_SRC_HOST);
  e->tid = p->pid;
  e->pid = pid;
  e->target_cpu = p->wake_cpu;
  e->_pad1 = 0;
  sched_wait_begin(e->tid, e->target_cpu, e->hdr.ts_ns);
  e->cgroup_id = task_cgroup_id(p);
  copy_comm(e->comm, p);
  bpf_get_current_comm(e->waker_comm, sizeof(e->waker_comm));
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(cw_sched_wakeup, struct task_struct *p) { return on_wakeup(p); }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(cw_sched_wakeup_new, struct task_struct *p) { return on_wakeup(p); }
