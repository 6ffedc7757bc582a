/* Page allocations, aggregated per process in the kernel (the tracepoint can fire millions of
 * times a second; the collector drains the map once a second), and OOM kills. */
#pragma once

#include "maps.bpf.h"

/* Processes allocating within one drain interval: 4096 is ample; overflow is counted. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct cw_page_agg);
} page_agg SEC(".maps");

/* raw_tp/mm_page_alloc(struct page *page, unsigned int order, gfp_t gfp, int migratetype) */
SEC("raw_tp/mm_page_alloc")
int cw_page_alloc(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  __u32 order = (__u32)ctx->args[1];
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  struct cw_page_agg *a = bpf_map_lookup_elem(&page_agg, &tgid);
  if (!a) {
    struct cw_page_agg init = {};
    if (bpf_map_update_elem(&page_agg, &tgid, &init, BPF_NOEXIST) == -7) {
      count_drop(CW_DROP_PAGE_MAP);
      return 0;
    }
    a = bpf_map_lookup_elem(&page_agg, &tgid);
    if (!a) return 0;
  }
  __sync_fetch_and_add(&a->pages, 1ULL << (order & 31));
  __sync_fetch_and_add(&a->calls, 1);
  if (order > a->max_order) a->max_order = order;
  return 0;
}

/* raw_tp/mark_victim(struct task_struct *task, uid_t uid) on 6.x kernels. */
SEC("raw_tp/mark_victim")
int cw_oom_victim(struct bpf_raw_tracepoint_args *ctx) {
  struct task_struct *p = (struct task_struct *)ctx->args[0];
  struct cw_host_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), CW_OP_OOM_KILL, CW_REC_HOST, CW_SRC_MEM);
  e->dur_ns = 0;
  e->a[0] = BPF_CORE_READ(p, tgid);
  e->a[1] = BPF_CORE_READ(p, mm, total_vm);
  e->a[2] = e->a[3] = e->a[4] = e->a[5] = 0;
  bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
  return 0;
}
