// RAII for sqlite3* and sqlite3_stmt*, plus the small helpers every module uses to bind
// and read columns. No policy here: opening modes live in tracedb/open.h.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, SqliteCloser>;

class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = other.stmt_;
      other.stmt_ = nullptr;
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  static Result<Statement> prepare(sqlite3* db, std::string_view sql);

  sqlite3_stmt* get() const { return stmt_; }

  void bind(int index, int64_t v) { sqlite3_bind_int64(stmt_, index, v); }
  void bind(int index, double v) { sqlite3_bind_double(stmt_, index, v); }
  void bind(int index, std::string_view v) {
    sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_blob(int index, const void* data, size_t size) {
    sqlite3_bind_blob(stmt_, index, data, static_cast<int>(size), SQLITE_TRANSIENT);
  }
  void bind_null(int index) { sqlite3_bind_null(stmt_, index); }
  template <typename T>
  void bind_opt(int index, const std::optional<T>& v) {
    if (v) bind(index, *v);
    else bind_null(index);
  }

  // Returns SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t col_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  double col_double(int i) const { return sqlite3_column_double(stmt_, i); }
  bool col_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::string col_text(int i) const {
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, i)) : std::string();
  }
  std::string_view col_blob(int i) const {
    const void* b = sqlite3_column_blob(stmt_, i);
    return b ? std::string_view(static_cast<const char*>(b), sqlite3_column_bytes(stmt_, i)) : std::string_view();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs SQL that returns no rows (possibly several statements).
Result<void> exec_sql(sqlite3* db, std::string_view sql);

// First column of the first row as an integer; nullopt when no row.
Result<std::optional<int64_t>> query_int(sqlite3* db, std::string_view sql);

// "SQLite error N (name): message" for the last error on db.
std::string sqlite_error_text(sqlite3* db);

}  // namespace causeway
