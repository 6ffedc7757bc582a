// How one ingero op becomes one causeway event: which op (a fixed catalog id where the
// meaning matches, else a name kept as-is with an id >= 10000), where the call starts, and
// where ingero's two generic args go in a0..a5. docs/IMPORT.md has the table and the why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tracedb/records.h"

namespace causeway {

// One row of ingero's events table (missing columns read as 0).
struct IngeroRow {
  int64_t ts_ns = 0;      // Unix ns: call entry for CUDA/driver, emission time for host/io
  int64_t dur_ns = 0;
  int64_t pid = 0, tid = 0;
  int64_t arg0 = 0, arg1 = 0;
  int64_t ret = 0;
  int64_t stack_hash = 0;
  int64_t cgroup_id = 0;
};

enum class ArgPlan : uint8_t {
  raw,          // a0 = arg0, a1 = arg1 (layout unknown to us: arg_names says "arg0,arg1")
  alloc,        // a0 = bytes
  free_ptr,     // a1 = device pointer
  copy,         // a0 = bytes, a2 = copy kind (ingero: direction)
  launch,       // a1 = kernel function pointer
  none,         // ingero records nothing we can place (sync calls)
  block,        // a0 = nr_sector * 512 bytes, a2 = sector, a3 = is_write
  page_alloc,   // a0 = pages (ingero: bytes = 4096 << order), a1 = order
  target_pid,   // a0 = arg1 (fork child, OOM victim: ingero's target_pid)
  host_raw,     // sched_switch / sched_wakeup kept by name: a0 = arg0, a1 = arg1 (target tid)
};

struct OpMapping {
  std::string source;            // ours: cuda | driver | nccl | host | io | net | mem
  std::string name;              // ours (catalog name, or ingero's name kept)
  bool in_catalog = false;       // a fixed op id (< 10000)
  bool is_call = true;
  std::string arg_names;         // for ops added with ensure_op
  bool ts_is_end = false;        // ingero's timestamp is when the event ended: start = ts - dur
  ArgPlan args = ArgPlan::raw;
  int64_t is_write = 0;          // block: a3
};

// ingero source name (CUDA, DRIVER, HOST, IO, TCP, NET, NCCL, …) and op name as in its tables.
OpMapping map_ingero_op(std::string_view ingero_source, std::string_view ingero_op);

// Our source for an ingero source name; "host" when it has no counterpart.
std::string map_ingero_source(std::string_view ingero_source);

// Fills a CallRecord (op id given by the caller) from an ingero row under a mapping.
CallRecord to_call_record(const OpMapping& m, uint16_t op_id, const IngeroRow& row);

}  // namespace causeway
