#include "sqlguard/guard.h"

#include <chrono>
#include <cmath>
#include <optional>

#include "common/json_exact.h"
#include "sqlguard/authorizer.h"
#include "sqlguard/safe_functions.h"
#include "sqlguard/validator.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::sqlguard {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBlobHexBytes = 256;

// Creates json_each/json_tree's eponymous tables while the authorizer is dormant: their first
// use on a connection makes SQLite ask for an UPDATE of sqlite_master, which an authorizer
// denying all writes would turn into a failure of a harmless query.
void warm_up_eponymous_tables(sqlite3* db) {
  sqlite3_exec(db, "SELECT 1 FROM json_each('[]'); SELECT 1 FROM json_tree('[]');", nullptr, nullptr, nullptr);
}

nlohmann::json cell(sqlite3_stmt* st, int i, size_t& bytes) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
      bytes += 8;
      return sqlite3_column_int64(st, i);
    case SQLITE_FLOAT:
      bytes += 8;
      return sqlite3_column_double(st, i);
    case SQLITE_TEXT: {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      size_t n = static_cast<size_t>(sqlite3_column_bytes(st, i));
      bytes += n;
      return t ? std::string(t, n) : std::string();
    }
    case SQLITE_BLOB: {
      const auto* b = static_cast<const unsigned char*>(sqlite3_column_blob(st, i));
      size_t n = static_cast<size_t>(sqlite3_column_bytes(st, i));
      bytes += n;
      static constexpr char kHex[] = "0123456789abcdef";
      std::string out = "x'";
      for (size_t k = 0; k < n && k < kBlobHexBytes; ++k) {
        out += kHex[b[k] >> 4];
        out += kHex[b[k] & 15];
      }
      out += n > kBlobHexBytes ? "…'" : "'";
      return out;
    }
    default:
      return nullptr;
  }
}

struct StmtCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtCloser>;

}  // namespace

struct GuardedConnection::State {
  DbHandle owned;           // set when this object opened the DB
  sqlite3* db = nullptr;
  GuardLayers layers;
  std::unique_ptr<Authorizer> authorizer;
  ProgressState progress;
  std::atomic<bool> interrupted{false};  // set by interrupt() from any thread
  std::optional<SavedLimits> saved_limits;  // borrowed connections get theirs back

  ~State() {
    if (!db) return;
    install_progress_handler(db, nullptr);
    if (authorizer) Authorizer::uninstall(db);
    if (saved_limits && !owned) restore_limits(db, *saved_limits);
  }

  Result<void> setup() {
    if (layers.connection) {
      if (auto r = harden_connection(db); !r) return r;
      saved_limits = apply_limits(db);
      if (auto r = register_safe_functions(db); !r) return r;
      cap_sqlite_heap(kHeapCapBytes);
    }
    warm_up_eponymous_tables(db);
    if (layers.authorizer) {
      authorizer = std::make_unique<Authorizer>(Authorizer::schema_objects(db));
      authorizer->install(db);
    }
    install_progress_handler(db, &progress);
    return {};
  }

  Error stopped_error(const QueryLimits& limits, Clock::time_point start) const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (progress.cancelled || interrupted.load())
      return make_error("sql_cancelled", "query cancelled after " + std::to_string(ms) + " ms");
    return make_error("sql_timeout", "query stopped after " + std::to_string(ms) + " ms: it reached the " +
                                         std::to_string(limits.deadline_ms) +
                                         " ms deadline; narrow it (WHERE ts_ns/session_id, LIMIT) or use the "
                                         "per-second rollups (v_op_seconds)");
  }

  Error sqlite_failure(int rc, const QueryLimits& limits, Clock::time_point start) const {
    int primary = rc & 0xFF;
    if (primary == SQLITE_INTERRUPT) return stopped_error(limits, start);
    std::string msg = sqlite3_errmsg(db);
    if (primary == SQLITE_TOOBIG)
      return make_error("sql_resource", "a string or blob exceeded sqlguard's size limit (" +
                                            std::to_string(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1)) +
                                            " bytes): " + msg);
    if (primary == SQLITE_NOMEM)
      return make_error("sql_resource", "the query exceeded sqlguard's memory cap; aggregate or narrow it");
    if (primary == SQLITE_READONLY)
      return make_error("sql_denied", "the trace DB is read-only here: " + msg);
    if (primary == SQLITE_AUTH) return make_error("sql_denied", "not authorized: " + msg);
    return make_error("sql_error", msg);
  }

  // Prepares exactly one statement; the text after it must hold no other statement.
  Result<StmtPtr> prepare(std::string_view sql, const QueryLimits& limits, Clock::time_point start) {
    for (int attempt = 0;; ++attempt) {
      sqlite3_stmt* raw = nullptr;
      const char* tail = nullptr;
      if (authorizer) authorizer->arm();
      int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), 0, &raw, &tail);
      StmtPtr stmt(raw);
      std::string verdict = authorizer ? authorizer->verdict() : "";
      bool eponymous_retry = authorizer && authorizer->denied_eponymous_init() && attempt == 0;
      if (authorizer) authorizer->disarm();
      if (eponymous_retry && (rc != SQLITE_OK || !verdict.empty())) {
        // The schema changed since warm-up (a writer migrated): warm up again, once.
        warm_up_eponymous_tables(db);
        continue;
      }
      if (authorizer && !verdict.empty() && (rc == SQLITE_OK || (rc & 0xFF) == SQLITE_AUTH))
        return make_error("sql_denied", "denied by sqlguard's authorizer: " + verdict +
                                            " (only SELECT over the trace tables and views with allow-listed "
                                            "functions is permitted)");
      if (rc != SQLITE_OK) return sqlite_failure(rc, limits, start);
      if (!stmt) return make_error("sql_rejected", "no SQL statement found (only whitespace or comments)");
      if (tail && tail < sql.data() + sql.size()) {
        std::string_view rest(tail, static_cast<size_t>(sql.data() + sql.size() - tail));
        sqlite3_stmt* next = nullptr;
        if (authorizer) authorizer->arm();
        int rc2 = sqlite3_prepare_v3(db, rest.data(), static_cast<int>(rest.size()), 0, &next, nullptr);
        if (authorizer) authorizer->disarm();
        StmtPtr next_stmt(next);
        if (rc2 != SQLITE_OK || next_stmt)
          return make_error("sql_rejected", "more than one statement: text follows the first statement at byte " +
                                                std::to_string(tail - sql.data()) + "; send one statement per query");
      }
      if (layers.connection && !sqlite3_stmt_readonly(stmt.get()))
        return make_error("sql_denied", "the statement would modify the database; only read-only statements run");
      return stmt;
    }
  }

  Result<QueryResult> run(std::string_view sql, const QueryLimits& limits) {
    const auto start = Clock::now();
    if (limits.max_rows == 0 || limits.max_rows > kMaxRowsHardCap)
      return make_error("usage", "row limit must be between 1 and " + std::to_string(kMaxRowsHardCap));
    if (limits.deadline_ms <= 0) return make_error("usage", "deadline must be positive");
    if (layers.validator)
      if (auto v = validate_sql(sql); !v) return v.error();
    if (sql.size() > static_cast<size_t>(INT32_MAX)) return make_error("sql_rejected", "SQL text too large");
    // SQLite stops reading at a NUL byte, so text after one would be silently ignored.
    if (auto nul = sql.find('\0'); nul != std::string_view::npos)
      return make_error("sql_rejected", "NUL byte in SQL text at byte " + std::to_string(nul));
    if (layers.connection) {
      // A previous statement on a borrowed or long-lived connection cannot have turned this
      // off past the other layers, but re-asserting costs ~1 µs.
      sqlite3_exec(db, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
    }
    progress.deadline = start + std::chrono::milliseconds(limits.deadline_ms);
    progress.cancel = limits.cancel;
    progress.timed_out = progress.cancelled = false;
    interrupted.store(false);
    progress.active = true;
    struct Deactivate {
      ProgressState& p;
      ~Deactivate() { p.active = false; }
    } deactivate{progress};

    auto prepared = prepare(sql, limits, start);
    if (!prepared) return prepared.error();
    sqlite3_stmt* st = prepared->get();

    QueryResult out;
    const int ncol = sqlite3_column_count(st);
    for (int i = 0; i < ncol; ++i) {
      const char* name = sqlite3_column_name(st, i);
      out.columns.emplace_back(name ? name : "");
    }
    size_t bytes = 0;
    for (size_t skipped = 0;;) {
      int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return sqlite_failure(rc, limits, start);
      if (skipped < limits.skip_rows) {
        ++skipped;
        continue;
      }
      if (out.rows.size() >= limits.max_rows) {
        out.truncated = true;
        out.truncated_by = "max_rows";
        break;
      }
      std::vector<nlohmann::json> row;
      row.reserve(static_cast<size_t>(ncol));
      size_t row_bytes = 0;
      for (int i = 0; i < ncol; ++i) row.push_back(cell(st, i, row_bytes));
      if (bytes + row_bytes > limits.max_bytes) {
        out.truncated = true;
        out.truncated_by = "max_bytes";
        break;
      }
      bytes += row_bytes;
      out.rows.push_back(std::move(row));
    }
    out.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return out;
  }
};

nlohmann::json to_json(const QueryResult& r) {
  // SQLite types values, not columns: a column's type is the storage class its returned values
  // have ("null" when every value is NULL, "mixed" when they differ). A column holding an
  // integer beyond ±(2^53 − 1) (a stack hash, a Unix-ns timestamp) sends all its integers as
  // decimal strings (common/json_exact.h), so JavaScript clients read them exactly and the
  // column keeps one JSON type; column_types still says "integer".
  const size_t n = r.columns.size();
  std::vector<std::string> types(n, "null");
  std::vector<bool> as_text(n, false);
  for (const auto& row : r.rows)
    for (size_t i = 0; i < n && i < row.size(); ++i) {
      const nlohmann::json& v = row[i];
      if (v.is_number_integer() && !exact_in_double(v.get<int64_t>())) as_text[i] = true;
      std::string t = v.is_null() ? "null" : v.is_number_integer() ? "integer" : v.is_number() ? "real" : "text";
      if (t == "null" || types[i] == t) continue;
      types[i] = types[i] == "null" ? t : "mixed";
    }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json out = row;
    for (size_t i = 0; i < n && i < out.size(); ++i)
      if (as_text[i] && out[i].is_number_integer()) out[i] = std::to_string(out[i].get<int64_t>());
    rows.push_back(std::move(out));
  }
  return {{"columns", r.columns}, {"column_types", types}, {"rows", std::move(rows)}, {"truncated", r.truncated},
          {"elapsed_ms", std::round(r.elapsed_ms * 1000.0) / 1000.0}};
}

GuardedConnection::GuardedConnection(std::unique_ptr<State> s) : s_(std::move(s)) {}
GuardedConnection::GuardedConnection(GuardedConnection&&) noexcept = default;
GuardedConnection& GuardedConnection::operator=(GuardedConnection&&) noexcept = default;
GuardedConnection::~GuardedConnection() = default;

Result<GuardedConnection> GuardedConnection::open(const std::string& db_path, const GuardLayers& layers) {
  auto db = open_read_only(db_path);
  if (!db) return db.error();
  auto s = std::make_unique<State>();
  s->owned = std::move(*db);
  s->db = s->owned.get();
  s->layers = layers;
  if (auto r = s->setup(); !r) return r.error();
  return GuardedConnection(std::move(s));
}

Result<GuardedConnection> GuardedConnection::borrow(sqlite3* db, const GuardLayers& layers) {
  if (!db) return make_error("sql_error", "no connection given");
  auto s = std::make_unique<State>();
  s->db = db;
  s->layers = layers;
  if (auto r = s->setup(); !r) return r.error();
  return GuardedConnection(std::move(s));
}

Result<QueryResult> GuardedConnection::run(std::string_view sql, const QueryLimits& limits) {
  return s_->run(sql, limits);
}

void GuardedConnection::interrupt() {
  // sqlite3_interrupt is safe from any thread; the flag makes the error say "cancelled".
  s_->interrupted.store(true);
  sqlite3_interrupt(s_->db);
}

sqlite3* GuardedConnection::handle() const { return s_->db; }

Result<QueryResult> run_guarded_query(const std::string& db_path, std::string_view sql, const QueryLimits& limits) {
  auto conn = GuardedConnection::open(db_path);
  if (!conn) return conn.error();
  return conn->run(sql, limits);
}

Result<QueryResult> run_guarded_query(sqlite3* read_only_db, std::string_view sql, const QueryLimits& limits) {
  auto conn = GuardedConnection::borrow(read_only_db);
  if (!conn) return conn.error();
  return conn->run(sql, limits);
}

}  // namespace causeway::sqlguard
