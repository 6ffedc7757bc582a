#include "importers/ingero_ops.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>

#include "tracedb/op_catalog.h"

namespace causeway {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// ingero's short names for calls our catalog spells out.
std::string_view catalog_name(std::string_view ingero_op) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kAliases{{
      {"cudaStreamSync", "cudaStreamSynchronize"},
      {"cudaDeviceSync", "cudaDeviceSynchronize"},
  }};
  for (const auto& [from, to] : kAliases)
    if (from == ingero_op) return to;
  return ingero_op;
}

ArgPlan plan_for_call(std::string_view arg_names) {
  if (arg_names.starts_with("bytes,dst_ptr,copy_kind")) return ArgPlan::copy;
  if (arg_names.starts_with("bytes")) return ArgPlan::alloc;
  if (arg_names == ",device_ptr") return ArgPlan::free_ptr;
  if (arg_names.find("function") != std::string_view::npos) return ArgPlan::launch;
  return ArgPlan::none;
}

OpMapping from_catalog(const OpInfo& op, ArgPlan args) {
  OpMapping m;
  m.source = std::string(source_name(op.source));
  m.name = std::string(op.name);
  m.in_catalog = true;
  m.is_call = op.is_call;
  m.args = args;
  return m;
}

}  // namespace

std::string map_ingero_source(std::string_view ingero_source) {
  std::string s = lower(ingero_source);
  if (s == "cuda" || s == "cuda_graph") return "cuda";
  if (s == "driver" || s == "nvidia") return "driver";
  if (s == "nccl") return "nccl";
  if (s == "io") return "io";
  if (s == "tcp" || s == "net") return "net";
  if (s == "mem") return "mem";
  return "host";
}

OpMapping map_ingero_op(std::string_view ingero_source, std::string_view ingero_op) {
  const std::string src = map_ingero_source(ingero_source);
  if (src == "cuda" || src == "driver" || src == "nccl") {
    if (const OpInfo* op = find_op(catalog_name(ingero_op)); op && op->is_call)
      return from_catalog(*op, src == "nccl" ? ArgPlan::raw : plan_for_call(op->arg_names));
    OpMapping m;
    m.source = src;
    m.name = std::string(ingero_op);
    m.arg_names = "arg0,arg1";
    return m;
  }
  if (src == "io") {
    // ingero stamps a block request at completion with its latency (block_rq_complete).
    if (ingero_op == "block_read" || ingero_op == "block_write") {
      OpMapping m = from_catalog(*find_op("block_rq"), ArgPlan::block);
      m.ts_is_end = true;
      m.is_write = ingero_op == "block_write" ? 1 : 0;
      return m;
    }
    OpMapping m;
    m.source = src;
    m.name = std::string(ingero_op);
    m.arg_names = "sectors,sector";
    m.ts_is_end = true;
    return m;
  }
  if (ingero_op == "sched_switch") {
    // Emitted when the thread comes back on CPU, duration = time it was off: the interval is
    // [ts - dur, ts]. No next task, prev_state or CPU, so not a sched row (docs/IMPORT.md).
    OpMapping m = from_catalog(*find_op("sched_switch"), ArgPlan::host_raw);
    m.ts_is_end = true;
    return m;
  }
  if (ingero_op == "sched_wakeup") return from_catalog(*find_op("sched_wakeup"), ArgPlan::host_raw);
  if (ingero_op == "mm_page_alloc") return from_catalog(*find_op("page_alloc"), ArgPlan::page_alloc);
  if (ingero_op == "oom_kill") return from_catalog(*find_op("oom_kill"), ArgPlan::target_pid);
  if (ingero_op == "process_fork") return from_catalog(*find_op("process_fork"), ArgPlan::target_pid);
  if (ingero_op == "process_exec") return from_catalog(*find_op("process_exec"), ArgPlan::none);
  if (ingero_op == "process_exit") return from_catalog(*find_op("process_exit"), ArgPlan::none);
  if (ingero_op == "tcp_retransmit") return from_catalog(*find_op("tcp_retransmit"), ArgPlan::none);
  OpMapping m;
  m.source = src;
  m.name = std::string(ingero_op);
  // Socket calls carry a duration; pod lifecycle and anything else unknown are points.
  m.is_call = src == "net";
  m.arg_names = "arg0,arg1";
  return m;
}

CallRecord to_call_record(const OpMapping& m, uint16_t op_id, const IngeroRow& row) {
  CallRecord r;
  r.dur_ns = std::max<int64_t>(0, row.dur_ns);
  r.ts_ns = m.ts_is_end ? row.ts_ns - r.dur_ns : row.ts_ns;
  r.pid = static_cast<uint32_t>(row.pid);
  r.tid = static_cast<uint32_t>(row.tid);
  r.op = op_id;
  r.ret = row.ret;
  r.stack_hash = static_cast<uint64_t>(row.stack_hash);
  r.cgroup_id = static_cast<uint64_t>(row.cgroup_id);
  switch (m.args) {
    case ArgPlan::raw:
    case ArgPlan::host_raw:
      r.a[0] = row.arg0;
      r.a[1] = row.arg1;
      break;
    case ArgPlan::alloc: r.a[0] = row.arg0; break;
    case ArgPlan::free_ptr: r.a[1] = row.arg0; break;
    case ArgPlan::copy:
      r.a[0] = row.arg0;
      r.a[2] = row.arg1;
      break;
    case ArgPlan::launch: r.a[1] = row.arg0; break;
    case ArgPlan::none: break;
    case ArgPlan::block:
      r.a[0] = row.arg0 * 512;
      r.a[2] = row.arg1;
      r.a[3] = m.is_write;
      break;
    case ArgPlan::page_alloc: {
      // ingero keeps the bytes (4096 << order) in arg0, older versions in duration.
      int64_t bytes = row.arg0 ? row.arg0 : row.dur_ns;
      int64_t pages = std::max<int64_t>(1, bytes / 4096);
      r.a[0] = pages;
      r.a[1] = std::bit_width(static_cast<uint64_t>(pages)) - 1;
      r.dur_ns = 0;
      r.ts_ns = row.ts_ns;
      break;
    }
    case ArgPlan::target_pid: r.a[0] = row.arg1; break;
  }
  return r;
}

}  // namespace causeway
