/* Baselines for bench/probe_cost, measured in the same run as the causeway programs:
 *   cw_empty_*  an empty uprobe + uretprobe pair (the kernel's fixed cost; the floor)
 *   cw_ts_*     + pairing through task-local storage (timestamp at entry, duration at return)
 *   cw_hash_*   + pairing through a hash map keyed by thread id (the classic way)
 *   cw_rb_*     task storage + a 152-byte ring-buffer record (reserved, then discarded so
 *               the ring never fills; same locking cost as a submit without wake-up) */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("uprobe")
int cw_empty_enter(void *ctx) { return 0; }

SEC("uretprobe")
int cw_empty_return(void *ctx) { return 0; }

struct ts_val {
  __u64 ts;
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct ts_val);
} bench_ts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u64);
} bench_hash SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} bench_rb SEC(".maps");

__u64 bench_sum = 0;

SEC("uprobe")
int cw_ts_enter(void *ctx) {
  struct ts_val *v = bpf_task_storage_get(&bench_ts, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (v) v->ts = bpf_ktime_get_ns();
  return 0;
}

SEC("uretprobe")
int cw_ts_return(void *ctx) {
  struct ts_val *v = bpf_task_storage_get(&bench_ts, bpf_get_current_task_btf(), 0, 0);
  if (v) bench_sum += bpf_ktime_get_ns() - v->ts;
  return 0;
}

SEC("uprobe")
int cw_hash_enter(void *ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64 ts = bpf_ktime_get_ns();
  bpf_map_update_elem(&bench_hash, &tid, &ts, BPF_ANY);
  return 0;
}

SEC("uretprobe")
int cw_hash_return(void *ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64 *ts = bpf_map_lookup_elem(&bench_hash, &tid);
  if (ts) {
    bench_sum += bpf_ktime_get_ns() - *ts;
    bpf_map_delete_elem(&bench_hash, &tid);
  }
  return 0;
}

SEC("uprobe")
int cw_rb_enter(void *ctx) { return cw_ts_enter(ctx); }

SEC("uretprobe")
int cw_rb_return(void *ctx) {
  struct ts_val *v = bpf_task_storage_get(&bench_ts, bpf_get_current_task_btf(), 0, 0);
  if (!v) return 0;
  __u64 *e = bpf_ringbuf_reserve(&bench_rb, 152, 0);
  if (!e) return 0;
  e[0] = bpf_ktime_get_ns() - v->ts;
  bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
