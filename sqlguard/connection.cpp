#include "sqlguard/connection.h"

namespace causeway::sqlguard {
namespace {

constexpr std::array<int, 12> kLimitIds = {
    SQLITE_LIMIT_LENGTH,         SQLITE_LIMIT_SQL_LENGTH,         SQLITE_LIMIT_COLUMN,
    SQLITE_LIMIT_EXPR_DEPTH,     SQLITE_LIMIT_COMPOUND_SELECT,    SQLITE_LIMIT_VDBE_OP,
    SQLITE_LIMIT_FUNCTION_ARG,   SQLITE_LIMIT_ATTACHED,           SQLITE_LIMIT_LIKE_PATTERN_LENGTH,
    SQLITE_LIMIT_VARIABLE_NUMBER, SQLITE_LIMIT_TRIGGER_DEPTH,     SQLITE_LIMIT_WORKER_THREADS};

int on_progress(void* arg) {
  auto* s = static_cast<ProgressState*>(arg);
  if (!s->active) return 0;
  if (s->cancel && s->cancel->load(std::memory_order_relaxed)) {
    s->cancelled = true;
    return 1;
  }
  if (std::chrono::steady_clock::now() >= s->deadline) {
    s->timed_out = true;
    return 1;
  }
  return 0;
}

}  // namespace

Result<void> harden_connection(sqlite3* db) {
  if (sqlite3_db_readonly(db, "main") != 1)
    return make_error("sql_error", "sqlguard needs a read-only connection (SQLITE_OPEN_READONLY); got a writable one");
  struct Flag {
    int op;
    int value;
    const char* name;
  };
  static constexpr Flag kFlags[] = {
      {SQLITE_DBCONFIG_DEFENSIVE, 1, "DEFENSIVE"},
      {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, "ENABLE_LOAD_EXTENSION"},
      {SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, "ENABLE_FTS3_TOKENIZER"},
      {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, "TRUSTED_SCHEMA"},
      {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, "ENABLE_TRIGGER"},
  };
  for (const Flag& f : kFlags) {
    int now = -1;
    if (sqlite3_db_config(db, f.op, f.value, &now) != SQLITE_OK || now != f.value)
      return make_error("sql_error", std::string("cannot set SQLITE_DBCONFIG_") + f.name + " on the query connection");
  }
  char* msg = nullptr;
  if (sqlite3_exec(db, "PRAGMA query_only = 1; PRAGMA temp_store = MEMORY; PRAGMA trusted_schema = 0;", nullptr,
                   nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return make_error("sql_error", "cannot configure the query connection: " + m);
  }
  return {};
}

SavedLimits apply_limits(sqlite3* db, const ConnectionLimits& l) {
  const std::array<int, 12> values = {l.length,         l.sql_length,   l.column,
                                      l.expr_depth,     l.compound_select, l.vdbe_op,
                                      l.function_arg,   l.attached,     l.like_pattern_length,
                                      l.variable_number, l.trigger_depth, l.worker_threads};
  SavedLimits saved;
  for (size_t i = 0; i < kLimitIds.size(); ++i) saved.values[i] = sqlite3_limit(db, kLimitIds[i], values[i]);
  return saved;
}

void restore_limits(sqlite3* db, const SavedLimits& saved) {
  for (size_t i = 0; i < kLimitIds.size(); ++i) sqlite3_limit(db, kLimitIds[i], saved.values[i]);
}

void cap_sqlite_heap(int64_t bytes) {
  if (bytes <= 0) return;
  int64_t hard = sqlite3_hard_heap_limit64(-1);
  if (hard == 0 || hard > bytes) sqlite3_hard_heap_limit64(bytes);
  int64_t soft = sqlite3_soft_heap_limit64(-1);
  if (soft == 0 || soft > bytes / 2) sqlite3_soft_heap_limit64(bytes / 2);
}

void install_progress_handler(sqlite3* db, ProgressState* state) {
  sqlite3_progress_handler(db, state ? kProgressOps : 0, state ? &on_progress : nullptr, state);
}

}  // namespace causeway::sqlguard
