/* Block requests, issue → complete, attributed to the process that issued them (current at
 * issue). Every process is recorded: the disk hog is usually not the traced one. */
#pragma once

#include "maps.bpf.h"

struct cw_rq_start {
  __u64 ts;
  __u64 cgroup_id;
  __u32 pid;
  __u32 tid;
  __u32 cpu;
  __u32 is_write;
  __u64 bytes;
  __u64 sector;
  __u64 dev;
};

/* In flight at once: queue depth × devices; 16384 covers 64 NVMe queues × 256. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct cw_rq_start);
} rq_start SEC(".maps");

/* raw_tp/block_rq_issue(struct request *rq) */
SEC("raw_tp/block_rq_issue")
int cw_block_issue(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  struct request *rq = (struct request *)ctx->args[0];
  __u64 key = (__u64)rq;
  __u64 id = bpf_get_current_pid_tgid();
  struct cw_rq_start s = {};
  s.ts = bpf_ktime_get_ns();
  s.cgroup_id = bpf_get_current_cgroup_id();
  s.pid = id >> 32;
  s.tid = (__u32)id;
  s.cpu = bpf_get_smp_processor_id();
  s.is_write = (BPF_CORE_READ(rq, cmd_flags) & 0xff) == 1; /* REQ_OP_WRITE */
  s.bytes = BPF_CORE_READ(rq, __data_len);
  s.sector = BPF_CORE_READ(rq, __sector);
  struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
  if (disk) s.dev = ((__u64)BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
  if (bpf_map_update_elem(&rq_start, &key, &s, BPF_ANY)) count_drop(CW_DROP_BLOCK_MAP);
  return 0;
}

/* raw_tp/block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
SEC("raw_tp/block_rq_complete")
int cw_block_complete(struct bpf_raw_tracepoint_args *ctx) {
  __u64 key = ctx->args[0];
  struct cw_rq_start *s = bpf_map_lookup_elem(&rq_start, &key);
  if (!s) return 0;
  struct cw_host_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    bpf_map_delete_elem(&rq_start, &key);
    return 0;
  }
  e->hdr.ts_ns = s->ts;
  e->hdr.cgroup_id = s->cgroup_id;
  e->hdr.pid = s->pid;
  e->hdr.tid = s->tid;
  e->hdr.cpu = s->cpu;
  e->hdr.op = CW_OP_BLOCK_RQ;
  e->hdr.kind = CW_REC_HOST;
  e->hdr.source = CW_SRC_IO;
  e->hdr.flags = 0;
  e->hdr._pad0 = 0;
  e->dur_ns = bpf_ktime_get_ns() - s->ts;
  e->a[0] = s->bytes;
  e->a[1] = s->dev;
  e->a[2] = s->sector;
  e->a[3] = s->is_write;
  e->a[4] = (__s64)(int)ctx->args[1]; /* blk_status_t */
  e->a[5] = 0;
  bpf_map_delete_elem(&rq_start, &key);
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}
