// sqlguard's public API: run SQL written by a person or a model (assume hostile: it may come
// from a prompt-injected assistant) over the trace DB, read-only, bounded in time, rows,
// bytes and memory. Used by `causeway query` and the MCP tools run_sql / describe_schema.
//
// Defense in depth, each layer enough on its own (tests switch the others off):
//   1. validator  (validator.h)  text level: one SELECT-like statement, allow-listed names
//   2. authorizer (authorizer.h) SQLite level: only SELECT / READ of trace tables / FUNCTION
//                                 on the allow-list / RECURSIVE
//   3. connection (connection.h) read-only open, query_only, DEFENSIVE, no extensions,
//                                 lowered sqlite3_limits, heap cap, non-quadratic trim(),
//                                 read-only statements only (sqlite3_stmt_readonly)
// Always on: one statement executed at most, progress-handler deadline, row/byte caps.
//
// Error codes (Error.code), stable — they appear in --json output and MCP tool errors:
//   sql_rejected   validator refused the text; message names the token and its byte offset
//   sql_denied     SQLite authorizer or read-only check refused what the statement does
//   sql_timeout    deadline reached (QueryLimits::deadline_ms); the query was stopped
//   sql_cancelled  QueryLimits::cancel was set or interrupt() was called
//   sql_resource   a size or memory limit was hit (string/blob too big, heap cap)
//   sql_error      SQLite could not compile or run it (syntax, no such column, ...)
//   usage          a limit outside its range (e.g. max_rows 0)
//   db_missing, db_open, db_corrupt, db_foreign, db_too_new, db_too_old   opening the DB
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "sqlguard/connection.h"

namespace causeway::sqlguard {

inline constexpr size_t kMaxRowsHardCap = 10000;

struct QueryLimits {
  int64_t deadline_ms = 5000;        // wall time for prepare + all steps
  size_t max_rows = 1000;            // 1 .. kMaxRowsHardCap; beyond: truncated
  size_t max_bytes = 4 * 1024 * 1024;  // sum of cell sizes (text/blob bytes, 8 per number)
  // Rows stepped over before any is kept (a client's cursor into a result it got in parts);
  // they count against the deadline, not against max_rows or max_bytes.
  size_t skip_rows = 0;
  // Set from any thread to stop the query at the next progress check (≈ every 10 µs of VM
  // work); the result is then sql_cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

// Process-wide cap on SQLite's heap, set when the first guarded connection opens.
inline constexpr int64_t kHeapCapBytes = 512LL * 1024 * 1024;

// Cells are JSON values: null, integer, real, text (raw bytes as stored — untrusted; dump
// with error_handler_t::replace and sanitize before display), blobs as "x'0a1b…'" (hex of
// the first 256 bytes, "…" when cut).
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
  bool truncated = false;           // more rows existed than max_rows / max_bytes allowed
  std::string truncated_by;         // "max_rows" | "max_bytes" | ""
  double elapsed_ms = 0;
};

// docs/INTERFACES.md shape: {"columns": [...], "column_types": [...], "rows": [[...]], "truncated": false,
// "elapsed_ms": 0}; integers of a column that holds one beyond ±(2^53 − 1) are decimal strings.
nlohmann::json to_json(const QueryResult& r);

// Which layers run. Only tests switch any off, to prove each one holds alone.
struct GuardLayers {
  bool validator = true;
  bool authorizer = true;
  bool connection = true;
};

class GuardedConnection {
 public:
  // Opens db_path read-only (tracedb/open.h: immutable fallback, identity checks).
  static Result<GuardedConnection> open(const std::string& db_path, const GuardLayers& layers = {});
  // Guards a connection the caller owns (it must be read-only unless layers.connection is
  // off); the caller's settings (limits, authorizer, progress handler) are restored when
  // this object goes away. The caller keeps db open for this object's lifetime.
  static Result<GuardedConnection> borrow(sqlite3* db, const GuardLayers& layers = {});

  GuardedConnection(GuardedConnection&&) noexcept;
  GuardedConnection& operator=(GuardedConnection&&) noexcept;
  ~GuardedConnection();

  Result<QueryResult> run(std::string_view sql, const QueryLimits& limits = {});

  // Stops a running query from another thread (sqlite3_interrupt); it fails sql_cancelled.
  void interrupt();
  sqlite3* handle() const;

 private:
  struct State;
  explicit GuardedConnection(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

// One-shot helpers: open (or borrow), run, close.
Result<QueryResult> run_guarded_query(const std::string& db_path, std::string_view sql, const QueryLimits& limits = {});
Result<QueryResult> run_guarded_query(sqlite3* read_only_db, std::string_view sql, const QueryLimits& limits = {});

}  // namespace causeway::sqlguard
