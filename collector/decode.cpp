#include "collector/decode.h"

#include <cstring>
#include <cstddef>

namespace causeway::collector {

// The kernel↔user contract, checked: sizes and the offsets the BPF side writes.
static_assert(sizeof(cw_header) == 40);
static_assert(offsetof(cw_header, cgroup_id) == 8 && offsetof(cw_header, pid) == 16 && offsetof(cw_header, op) == 28 &&
              offsetof(cw_header, kind) == 30 && offsetof(cw_header, flags) == 32);
static_assert(sizeof(cw_call_event) == 192 && offsetof(cw_call_event, py_stack) == 152 && offsetof(cw_call_event, run_ns) == 168 &&
              offsetof(cw_call_event, run_last_end) == 184);
static_assert(sizeof(cw_py_proc) == 32 && offsetof(cw_py_proc, instr_is_int) == 28);
static_assert(sizeof(cw_py_stack) == 8 + 16 * CW_PY_DEPTH && offsetof(cw_py_stack, instr) == 8 + 8 * CW_PY_DEPTH);
static_assert(offsetof(cw_call_event, dur_ns) == 40 && offsetof(cw_call_event, regs) == 56 &&
              offsetof(cw_call_event, extra) == 104 && offsetof(cw_call_event, stack_id) == 144 &&
              offsetof(cw_call_event, dclass) == 148);
static_assert(sizeof(cw_switch_event) == 112 && offsetof(cw_switch_event, prev_state) == 64 &&
              offsetof(cw_switch_event, next_cgroup_id) == 72 && offsetof(cw_switch_event, prev_comm) == 80);
static_assert(sizeof(cw_wakeup_event) == 96 && offsetof(cw_wakeup_event, cgroup_id) == 56 &&
              offsetof(cw_wakeup_event, comm) == 64);
static_assert(sizeof(cw_proc_event) == 72 && offsetof(cw_proc_event, comm) == 56);
static_assert(sizeof(cw_host_event) == 96 && offsetof(cw_host_event, a) == 48);
static_assert(sizeof(cw_listen_event) == 48 && offsetof(cw_listen_event, port) == 40);
static_assert(sizeof(cw_comm_info) == 24 && sizeof(cw_page_agg) == 24);
static_assert(sizeof(cw_run) == 40 && offsetof(cw_run, ns) == 16);
static_assert(sizeof(cw_stack_key) == 8 && offsetof(cw_stack_key, op) == 4);

namespace {

uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

uint32_t struct_u32(const cw_call_event& e, size_t byte_off) {
  uint32_t v;
  std::memcpy(&v, reinterpret_cast<const uint8_t*>(e.extra) + byte_off, sizeof(v));
  return v;
}
uint64_t struct_u64(const cw_call_event& e, size_t byte_off) {
  uint64_t v;
  std::memcpy(&v, reinterpret_cast<const uint8_t*>(e.extra) + byte_off, sizeof(v));
  return v;
}

int64_t s64(uint64_t v) { return static_cast<int64_t>(v); }

void fill_nccl(std::array<int64_t, 6>& a, const cw_call_event& e, uint64_t count, uint64_t dtype, uint64_t redop,
               uint64_t peer) {
  a[0] = s64(count);
  a[1] = s64(e.extra[CW_X_COMM_HASH]);
  a[2] = static_cast<int32_t>(lo32(e.extra[CW_X_RANKS]));  // -1: communicator created before the trace
  a[3] = hi32(e.extra[CW_X_RANKS]);
  a[4] = s64(e.extra[CW_X_SEQ]);
  a[5] = int64_t(lo32(dtype) & 0xff) | int64_t(lo32(redop) & 0xff) << 8 | int64_t(lo32(peer) & 0xffffffff) << 16;
}

// The fields every record kind stored as an event row takes from the common header.
CallRecord from_header(const cw_header& h) {
  CallRecord c;
  c.ts_ns = static_cast<int64_t>(h.ts_ns);
  c.pid = h.pid;
  c.tid = h.tid;
  c.op = h.op;
  c.cpu = static_cast<int32_t>(h.cpu);
  c.cgroup_id = h.cgroup_id;
  return c;
}

}  // namespace

int64_t pack_dim3(uint64_t x, uint64_t y, uint64_t z) {
  constexpr uint64_t m = (1u << 21) - 1;
  return static_cast<int64_t>((x & m) | (y & m) << 21 | (z & m) << 42);
}

std::string comm_string(const char (&comm)[16]) { return std::string(comm, strnlen(comm, sizeof(comm))); }

std::optional<uint8_t> record_kind(const void* data, size_t size) {
  if (size < sizeof(cw_header)) return std::nullopt;
  return static_cast<const cw_header*>(data)->kind;
}

std::array<int64_t, 6> decode_call_args(const cw_call_event& e) {
  std::array<int64_t, 6> a{};
  const __u64* r = e.regs;
  const __u64* x = e.extra;
  const bool stream = (e.aux & CW_AUX_STREAM) != 0;
  switch (e.dclass) {
    case CW_DC_ALLOC:
      a[0] = s64(r[1]);
      a[1] = s64(x[CW_X_OUT]);
      break;
    case CW_DC_FREE: a[1] = s64(r[0]); break;
    case CW_DC_COPY:
      a[0] = s64(r[2]);
      a[1] = s64(r[0]);
      a[2] = lo32(r[3]);
      a[3] = stream ? s64(r[4]) : 0;
      break;
    case CW_DC_COPY_2D:
      a[0] = s64(r[4] * r[5]);  // width bytes × height rows
      a[1] = s64(r[0]);
      a[2] = lo32(x[0]);
      a[3] = stream ? s64(x[1]) : 0;
      break;
    case CW_DC_COPY_PEER:
      a[0] = s64(r[4]);
      a[1] = s64(r[0]);
      a[2] = 4;  // peer copies are cudaMemcpyDefault-like (unified addressing)
      a[3] = stream ? s64(r[5]) : 0;
      break;
    case CW_DC_SET:
      a[0] = s64(r[2]);
      a[1] = s64(r[0]);
      a[3] = stream ? s64(r[3]) : 0;
      break;
    case CW_DC_LAUNCH_RT:
      // dim3 (12 bytes) travels in two registers: x | y << 32, then z.
      a[1] = s64(r[0]);
      a[3] = s64(x[1]);  // stack: sharedMem, stream
      a[4] = pack_dim3(lo32(r[1]), hi32(r[1]), lo32(r[2]));
      a[5] = pack_dim3(lo32(r[3]), hi32(r[3]), lo32(r[4]));
      break;
    case CW_DC_LAUNCH_RT_EXC:
      // cudaLaunchConfig_t: dim3 grid @0, dim3 block @12, size_t smem @24, stream @32
      a[1] = s64(r[1]);
      a[3] = s64(struct_u64(e, 32));
      a[4] = pack_dim3(struct_u32(e, 0), struct_u32(e, 4), struct_u32(e, 8));
      a[5] = pack_dim3(struct_u32(e, 12), struct_u32(e, 16), struct_u32(e, 20));
      break;
    case CW_DC_LAUNCH_DRV:
      // (f, gx, gy, gz, bx, by | bz, smem, stream)
      a[1] = s64(r[0]);
      a[3] = s64(x[2]);
      a[4] = pack_dim3(lo32(r[1]), lo32(r[2]), lo32(r[3]));
      a[5] = pack_dim3(lo32(r[4]), lo32(r[5]), lo32(x[0]));
      break;
    case CW_DC_LAUNCH_DRV_EX:
      // CUlaunchConfig: u32 gx,gy,gz,bx,by,bz,smem @0..27, stream @32
      a[1] = s64(r[1]);
      a[3] = s64(struct_u64(e, 32));
      a[4] = pack_dim3(struct_u32(e, 0), struct_u32(e, 4), struct_u32(e, 8));
      a[5] = pack_dim3(struct_u32(e, 12), struct_u32(e, 16), struct_u32(e, 20));
      break;
    case CW_DC_STREAM0: a[3] = s64(r[0]); break;
    case CW_DC_GRAPH_EXEC:
      a[1] = s64(r[0]);
      a[3] = stream ? s64(r[1]) : 0;
      break;
    case CW_DC_CAPTURE_BEGIN:
      a[0] = lo32(r[1]);  // cudaStreamCaptureMode
      a[3] = s64(r[0]);
      break;
    case CW_DC_CAPTURE_END:
      a[2] = s64(x[CW_X_OUT]);  // the captured graph
      a[3] = s64(r[0]);
      break;
    case CW_DC_GRAPH_INSTANTIATE:
      a[1] = s64(x[CW_X_OUT]);  // the new graph exec
      a[2] = s64(r[1]);
      break;
    case CW_DC_EVENT: a[1] = s64(r[0]); break;
    case CW_DC_DRV_COPY:
      a[0] = s64(r[2]);
      a[1] = s64(r[0]);
      a[2] = e.aux & CW_AUX_COPY_KIND_MASK;
      a[3] = stream ? s64(r[3]) : 0;
      break;
    case CW_DC_NCCL_INIT_RANK:
      a[1] = s64(x[CW_X_COMM_HASH]);
      a[2] = static_cast<int32_t>(lo32(r[2]));
      a[3] = static_cast<int32_t>(lo32(r[1]));
      break;
    case CW_DC_NCCL_INIT_ALL:
      a[1] = s64(x[CW_X_COMM_HASH]);
      a[3] = static_cast<int32_t>(lo32(r[1]));
      break;
    case CW_DC_NCCL_DESTROY:
      a[1] = s64(x[CW_X_COMM_HASH]);
      a[2] = static_cast<int32_t>(lo32(x[CW_X_RANKS]));
      a[3] = hi32(x[CW_X_RANKS]);
      break;
    case CW_DC_NCCL_REDUCE_LIKE: fill_nccl(a, e, r[2], r[3], r[4], 0); break;
    case CW_DC_NCCL_ALL_GATHER: fill_nccl(a, e, r[2], r[3], 0, 0); break;
    case CW_DC_NCCL_BROADCAST: fill_nccl(a, e, r[2], r[3], 0, r[4]); break;
    case CW_DC_NCCL_BCAST: fill_nccl(a, e, r[1], r[2], 0, r[3]); break;
    case CW_DC_NCCL_REDUCE: fill_nccl(a, e, r[2], r[3], r[4], r[5]); break;
    case CW_DC_NCCL_P2P: fill_nccl(a, e, r[1], r[2], 0, r[3]); break;
    default: break;
  }
  return a;
}

CallRecord decode_call(const cw_call_event& e) {
  CallRecord c = from_header(e.hdr);
  c.dur_ns = static_cast<int64_t>(e.dur_ns);
  c.ret = e.ret;
  c.a = decode_call_args(e);
  return c;
}

cw_run run_of(const cw_call_event& e) {
  cw_run r{};
  r.tid = e.hdr.tid;
  r.pid = e.hdr.pid;
  r.calls = e.run_calls;
  r.op = e.run_op;
  r.ns = e.run_ns;
  r.first_ns = e.run_first_ns;
  r.last_end = e.run_last_end;
  return r;
}

CallRecord decode_run(const cw_run& r) {
  CallRecord c;
  c.ts_ns = static_cast<int64_t>(r.first_ns);
  c.dur_ns = r.last_end > r.first_ns ? static_cast<int64_t>(r.last_end - r.first_ns) : 0;
  c.pid = r.pid;
  c.tid = r.tid;
  c.op = CW_OP_CALLS_AGGREGATED;
  c.a[0] = r.calls;
  c.a[1] = static_cast<int64_t>(r.ns);
  c.a[2] = r.op;
  return c;
}

CallRecord decode_page_agg(uint32_t pid, const cw_page_agg& agg) {
  CallRecord c;
  c.pid = pid;
  c.tid = pid;
  c.op = CW_OP_PAGE_ALLOC;
  c.a[0] = static_cast<int64_t>(agg.pages);
  c.a[1] = agg.max_order;
  return c;
}

SwitchRecord decode_switch(const cw_switch_event& e) {
  SwitchRecord s;
  s.ts_ns = static_cast<int64_t>(e.hdr.ts_ns);
  s.cpu = static_cast<int32_t>(e.hdr.cpu);
  s.prev_tid = e.prev_tid;
  s.prev_pid = e.prev_pid;
  s.prev_prio = e.prev_prio;
  s.prev_state = e.prev_state;
  s.next_tid = e.next_tid;
  s.next_pid = e.next_pid;
  s.next_prio = e.next_prio;
  return s;
}

WakeupRecord decode_wakeup(const cw_wakeup_event& e) {
  WakeupRecord w;
  w.ts_ns = static_cast<int64_t>(e.hdr.ts_ns);
  w.tid = e.tid;
  w.pid = e.pid;
  w.waker_tid = e.hdr.tid;
  w.waker_pid = e.hdr.pid;
  w.target_cpu = e.target_cpu;
  return w;
}

CallRecord decode_host(const cw_host_event& e) {
  CallRecord c = from_header(e.hdr);
  c.dur_ns = static_cast<int64_t>(e.dur_ns);
  for (int i = 0; i < 6; ++i) c.a[i] = e.a[i];
  // The events table has no flags column: a retransmit says in a5 whom pid/tid name.
  if (e.hdr.op == CW_OP_TCP_RETRANSMIT || e.hdr.op == CW_OP_TCP_RETRANSMIT6)
    c.a[5] = (e.hdr.flags & CW_F_SOCK_OWNER) ? 1 : 0;
  return c;
}

CallRecord decode_proc(const cw_proc_event& e) {
  CallRecord c = from_header(e.hdr);
  switch (e.hdr.op) {
    case CW_OP_PROC_EXEC: c.a[0] = e.ppid; break;
    case CW_OP_PROC_FORK: c.a[0] = e.child_pid; break;
    case CW_OP_PROC_EXIT: c.a[0] = e.exit_code; break;
  }
  return c;
}

}  // namespace causeway::collector
