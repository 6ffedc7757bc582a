// Connection-level gate: settings that make a read-only SQLite connection unable to write,
// load code or run away, whatever SQL reaches it. Applied to the connection the guard owns,
// or temporarily to one it borrows (and then restored).
#pragma once

#include <sqlite3.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/result.h"

namespace causeway::sqlguard {

// Lowered sqlite3_limit values, with the arithmetic behind each.
struct ConnectionLimits {
  // Largest string or blob a query may create or read. instr()/replace() compare a needle
  // against every position of a haystack inside one VM step, where no progress handler
  // runs: the worst case is n²/4 byte comparisons, measured 0.31 s at n = 256 KiB (and 4×
  // that per doubling). Trace values are far smaller (a stack's frames are a few KB).
  int length = 256 * 1024;
  int sql_length = 100 * 1024;   // same as the validator's kMaxSqlBytes
  int column = 500;              // result columns, GROUP BY / ORDER BY terms
  int expr_depth = 100;          // parser recursion; analyst queries nest < 20
  int compound_select = 50;      // UNION arms
  int vdbe_op = 50000;           // program size; views + joins compile to a few thousand
  int function_arg = 100;
  int attached = 0;              // no ATTACH at all (VACUUM INTO needs one too)
  // LIKE/GLOB run a whole pattern match in one VM step: pattern × subject work with no
  // progress handler in between, so the pattern is kept short.
  int like_pattern_length = 200;
  // User SQL gets no bound parameters (the validator refuses them); a few stay possible for
  // the guard's own statements on the same connection (describe_schema).
  int variable_number = 10;
  int trigger_depth = 1;
  int worker_threads = 0;
};

// The limits a connection had before apply_limits, to restore a borrowed connection.
struct SavedLimits {
  std::array<int, 12> values{};
};

// Refuses a connection that can write its main DB; then DEFENSIVE on, extension loading
// and the two-argument fts3_tokenizer off, schema untrusted, query_only, temp tables in
// memory (no temp files), triggers and views from the schema still usable.
Result<void> harden_connection(sqlite3* db);

SavedLimits apply_limits(sqlite3* db, const ConnectionLimits& limits = {});
void restore_limits(sqlite3* db, const SavedLimits& saved);

// Caps SQLite's heap for the whole process (sqlite3_hard_heap_limit64 is global): a query
// that tries to allocate beyond it fails with SQLITE_NOMEM instead of taking the host's
// memory. Only ever lowers an existing limit. A soft limit at half makes SQLite shed cache
// first.
void cap_sqlite_heap(int64_t bytes);

// State read by the progress handler: a deadline and an optional cancel flag (MCP's
// notifications/cancelled sets it from another thread).
struct ProgressState {
  bool active = false;
  std::chrono::steady_clock::time_point deadline{};
  const std::atomic<bool>* cancel = nullptr;
  bool timed_out = false;
  bool cancelled = false;
};

// Every kProgressOps VM instructions SQLite calls the handler; at ~10 ns per instruction
// that is a check every ~10 µs, so a runaway stops within milliseconds of its deadline and
// the clock read costs < 1%.
inline constexpr int kProgressOps = 1000;
void install_progress_handler(sqlite3* db, ProgressState* state);

}  // namespace causeway::sqlguard
