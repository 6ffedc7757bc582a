#include "tracedb/sqlite_handle.h"

namespace causeway {

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return make_error("sql", sqlite_error_text(db) + " in: " + std::string(sql.substr(0, 200)));
  }
  return Statement(stmt);
}

Result<void> exec_sql(sqlite3* db, std::string_view sql) {
  std::string text(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &msg);
  if (rc != SQLITE_OK) {
    std::string m = msg ? msg : sqlite3_errstr(rc);
    sqlite3_free(msg);
    return make_error("sql", "SQLite error " + std::to_string(rc) + ": " + m);
  }
  return {};
}

Result<std::optional<int64_t>> query_int(sqlite3* db, std::string_view sql) {
  auto stmt = Statement::prepare(db, sql);
  if (!stmt) return stmt.error();
  int rc = stmt->step();
  if (rc == SQLITE_ROW) {
    if (stmt->col_null(0)) return std::optional<int64_t>();
    return std::optional<int64_t>(stmt->col_int(0));
  }
  if (rc == SQLITE_DONE) return std::optional<int64_t>();
  return make_error("sql", sqlite_error_text(db));
}

std::string sqlite_error_text(sqlite3* db) {
  int code = sqlite3_extended_errcode(db);
  return "SQLite error " + std::to_string(code) + " (" + sqlite3_errstr(code) + "): " + sqlite3_errmsg(db);
}

}  // namespace causeway
