// The tail of an op by cause (docs/DIAGNOSIS.md "Tail breakdown"): which causes explain its
// p99 / p99.9 calls — their share of the tail's calls and of its time — and what is left
// unexplained. Read from rollup histograms (every call, no raw scan) and the call_causes rows
// the correlator writes for the calls it claimed. Shared by `causeway explain --tail` and MCP
// get_tail_breakdown.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

struct TailQuery {
  std::optional<std::string> op;      // exact op name; default: every CUDA/driver/NCCL op
  std::optional<uint32_t> pid;
  double quantile = 0.99;             // the tail is the slowest (1 - quantile) of the calls
  std::optional<int64_t> since_ns;
  std::optional<int64_t> session_id;  // default: the latest session
  size_t limit = 10;                  // (op, process) pairs, largest tail time first
  uint64_t min_calls = 20;            // fewer calls have no meaningful tail
};

struct TailCause {
  std::string cause;
  uint64_t calls = 0;
  double time_ns = 0;    // the tail calls' own durations
  double lost_ns = 0;    // what the cause took from them
  std::vector<std::string> chain_ids;
};

struct TailOp {
  std::string source, op;
  uint32_t pid = 0;
  std::string comm;               // untrusted
  uint64_t calls = 0;             // all calls of the op in the window
  uint64_t quantile_ns = 0;       // the quantile's value
  uint64_t threshold_ns = 0;      // tail = calls at or above this: the slowest (1 - quantile) of them, to a histogram bucket
  uint64_t tail_calls = 0;
  double tail_ns = 0;
  std::vector<TailCause> causes;  // largest tail time first
  uint64_t unexplained_calls = 0;
  double unexplained_ns = 0;
};

struct TailResult {
  int64_t session_id = 0;
  int64_t from_ns = 0, to_ns = 0;
  double quantile = 0.99;
  std::vector<TailOp> ops;
  bool truncated = false;  // more (op, process) pairs than limit
};

// Fails with "no_data" when the DB holds no session, "invalid_argument" for a quantile
// outside (0, 1).
Result<TailResult> tail_breakdown(sqlite3* db, const TailQuery& query);

nlohmann::json tail_to_json(const TailResult& result);
// Lines for people and models: one block per op, causes with their shares; comm sanitized.
std::string tail_to_text(const TailResult& result);

}  // namespace causeway
