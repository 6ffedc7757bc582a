/* Process lifecycle: exec (every process: discovery rescans its maps), fork and exit of
 * traced processes (children of a traced process are traced too). */
#pragma once

#include "maps.bpf.h"

static __always_inline struct cw_proc_event *proc_event(__u16 op) {
  struct cw_proc_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), op, CW_REC_PROC, CW_SRC_HOST);
  e->ppid = 0;
  e->exit_code = 0;
  e->child_pid = 0;
  e->_pad1 = 0;
  return e;
}

/* raw_tp/sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) */
SEC("raw_tp/sched_process_exec")
int cw_proc_exec(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  struct task_struct *p = (struct task_struct *)ctx->args[0];
  __u32 tgid = BPF_CORE_READ(p, tgid);
  bpf_map_delete_elem(&announced, &tgid); /* a new image: new maps to snapshot */
  struct cw_proc_event *e = proc_event(CW_OP_PROC_EXEC);
  if (!e) return 0;
  e->ppid = BPF_CORE_READ(p, real_parent, tgid);
  BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
  bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); /* rare; discovery wants it soon */
  return 0;
}

/* raw_tp/sched_process_fork(struct task_struct *parent, struct task_struct *child) */
SEC("raw_tp/sched_process_fork")
int cw_proc_fork(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  struct task_struct *parent = (struct task_struct *)ctx->args[0];
  struct task_struct *child = (struct task_struct *)ctx->args[1];
  __u32 ppid = BPF_CORE_READ(parent, tgid);
  __u32 cpid = BPF_CORE_READ(child, tgid);
  if (cpid == ppid || !is_traced(ppid)) return 0; /* threads, untraced parents */
  mark_traced(cpid);
  struct cw_proc_event *e = proc_event(CW_OP_PROC_FORK);
  if (!e) return 0;
  e->child_pid = cpid;
  e->ppid = BPF_CORE_READ(parent, real_parent, tgid);
  BPF_CORE_READ_STR_INTO(&e->comm, child, comm);
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}

/* raw_tp/sched_process_exit(struct task_struct *p): once per thread; we report the leader. */
SEC("raw_tp/sched_process_exit")
int cw_proc_exit(struct bpf_raw_tracepoint_args *ctx) {
  struct task_struct *p = (struct task_struct *)ctx->args[0];
  __u32 pid = BPF_CORE_READ(p, tgid);
  if (BPF_CORE_READ(p, pid) != pid || !is_traced(pid)) return 0;
  bpf_map_delete_elem(&announced, &pid); /* its pid may be reused */
  struct cw_proc_event *e = proc_event(CW_OP_PROC_EXIT);
  if (!e) return 0;
  e->ppid = BPF_CORE_READ(p, real_parent, tgid);
  /* exit_code is the wait status: exit status in bits 8..15, signal in 0..6. */
  int code = BPF_CORE_READ(p, exit_code);
  e->exit_code = (code & 0x7f) ? 128 + (code & 0x7f) : (code >> 8) & 0xff;
  BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
  bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
  return 0;
}
