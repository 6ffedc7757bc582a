// Top call stacks of traced calls: which call sites spent the time, with resolved frames.
// Shared by MCP get_stacks and (later) `causeway explain`.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/frames.h"
#include "common/result.h"

namespace causeway {

struct StackQuery {
  std::optional<std::string> op;       // exact op name
  std::optional<uint32_t> pid;
  std::optional<int64_t> since_ns;     // window = [end - since, end]; end = last event of the session
  std::optional<int64_t> session_id;   // default: the latest session
  size_t limit = 10;
  size_t offset = 0;                   // stacks skipped from the top (paging)
  size_t max_frames = 32;              // innermost frames kept per stack
};

struct StackEntry {
  int64_t stack_id = 0;
  std::string source;
  std::string op;
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  uint64_t errors = 0;
  std::vector<uint32_t> pids;
  std::vector<Frame> frames;           // user frame first, then innermost first; untrusted
  bool frames_cut = false;             // more than max_frames
  bool unwind_cut = false;             // the native walk stopped outside mapped code
};

struct StacksResult {
  int64_t session_id = 0;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  uint64_t calls_without_stack = 0;    // calls matching the filter that carry no stack
  std::vector<StackEntry> stacks;      // by total time, descending
  bool truncated = false;              // more stacks than limit
};

// Fails with "no_data" when the DB holds no session.
Result<StacksResult> top_stacks(sqlite3* db, const StackQuery& query);

// {"window":{from_ns,to_ns}, "stacks":[{stack_id, source, op, calls, total_us, mean_us, max_us,
//  errors, pids, frames: [{function, file, line, module, kind}], frames_cut, unwind_cut}], "calls_without_stack": N, "truncated": bool}
nlohmann::json stacks_to_json(const StacksResult& result);

}  // namespace causeway
