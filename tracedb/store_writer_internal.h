// Small helpers shared by the writer's files (tracedb/store_writer.cpp and the per-table-family
// tracedb/writer_*.cpp); not for use outside the writer.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::store_writer_detail {

inline constexpr int64_t kNsPerSec = 1'000'000'000;

// Pseudo-ops of the context rows, rolled up per second like calls (bpf/events.h).
inline constexpr uint16_t kSchedSwitchOp = 400;  // CW_OP_SCHED_SWITCH
inline constexpr uint16_t kSchedWakeupOp = 401;  // CW_OP_SCHED_WAKEUP

inline int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t floor_sec(int64_t ts_ns) {
  return ts_ns >= 0 ? ts_ns / kNsPerSec : (ts_ns - kNsPerSec + 1) / kNsPerSec;
}

// A meta row that breaks a constraint is skipped (as an upsert it should not); any other
// failure (a full disk) fails the batch.
inline int finish_meta(Statement& s) {
  int rc = s.step();
  s.reset();
  return (rc & 0xff) == SQLITE_CONSTRAINT ? SQLITE_DONE : rc;
}

// Prepares `sql` into `s`.
inline Result<void> prepare_into(sqlite3* h, Statement& s, std::string_view sql) {
  auto st = Statement::prepare(h, sql);
  if (!st) return st.error();
  s = std::move(*st);
  return {};
}

}  // namespace causeway::store_writer_detail
