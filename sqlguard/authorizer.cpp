#include "sqlguard/authorizer.h"

#include "sqlguard/lexer.h"
#include "sqlguard/policy.h"

namespace causeway::sqlguard {

const char* action_name(int action) {
  switch (action) {
    case SQLITE_CREATE_INDEX: return "CREATE INDEX";
    case SQLITE_CREATE_TABLE: return "CREATE TABLE";
    case SQLITE_CREATE_TEMP_INDEX: return "CREATE TEMP INDEX";
    case SQLITE_CREATE_TEMP_TABLE: return "CREATE TEMP TABLE";
    case SQLITE_CREATE_TEMP_TRIGGER: return "CREATE TEMP TRIGGER";
    case SQLITE_CREATE_TEMP_VIEW: return "CREATE TEMP VIEW";
    case SQLITE_CREATE_TRIGGER: return "CREATE TRIGGER";
    case SQLITE_CREATE_VIEW: return "CREATE VIEW";
    case SQLITE_DELETE: return "DELETE";
    case SQLITE_DROP_INDEX: return "DROP INDEX";
    case SQLITE_DROP_TABLE: return "DROP TABLE";
    case SQLITE_DROP_TEMP_INDEX: return "DROP TEMP INDEX";
    case SQLITE_DROP_TEMP_TABLE: return "DROP TEMP TABLE";
    case SQLITE_DROP_TEMP_TRIGGER: return "DROP TEMP TRIGGER";
    case SQLITE_DROP_TEMP_VIEW: return "DROP TEMP VIEW";
    case SQLITE_DROP_TRIGGER: return "DROP TRIGGER";
    case SQLITE_DROP_VIEW: return "DROP VIEW";
    case SQLITE_INSERT: return "INSERT";
    case SQLITE_PRAGMA: return "PRAGMA";
    case SQLITE_READ: return "READ";
    case SQLITE_SELECT: return "SELECT";
    case SQLITE_TRANSACTION: return "TRANSACTION";
    case SQLITE_UPDATE: return "UPDATE";
    case SQLITE_ATTACH: return "ATTACH";
    case SQLITE_DETACH: return "DETACH";
    case SQLITE_ALTER_TABLE: return "ALTER TABLE";
    case SQLITE_REINDEX: return "REINDEX";
    case SQLITE_ANALYZE: return "ANALYZE";
    case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
    case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
    case SQLITE_FUNCTION: return "FUNCTION";
    case SQLITE_SAVEPOINT: return "SAVEPOINT";
    case SQLITE_RECURSIVE: return "RECURSIVE";
    default: return "action";
  }
}

void Authorizer::install(sqlite3* db) { sqlite3_set_authorizer(db, &Authorizer::callback, this); }

void Authorizer::uninstall(sqlite3* db) { sqlite3_set_authorizer(db, nullptr, nullptr); }

std::string Authorizer::verdict() const {
  if (!denial_.empty()) return denial_;
  for (const std::string& name : count_probes_)
    if (!inner_names_.count(name)) return "READ " + name;
  if (!saw_select_) return "a statement that is not a SELECT";
  return "";
}

int Authorizer::callback(void* self, int action, const char* a1, const char* a2, const char* db, const char* inner) {
  return static_cast<Authorizer*>(self)->decide(action, a1, a2, db, inner);
}

int Authorizer::deny(std::string what) {
  // Keep the first denial: it is the one closest to what the statement tried.
  if (denial_.empty()) denial_ = std::move(what);
  return SQLITE_DENY;
}

int Authorizer::decide(int action, const char* a1, const char* a2, const char* db, const char* inner) {
  if (!armed_) return SQLITE_OK;
  auto str = [](const char* s) { return std::string(s ? s : ""); };
  if (inner && *inner) inner_names_.insert(ascii_lower(inner));
  switch (action) {
    case SQLITE_SELECT:
      saw_select_ = true;
      return SQLITE_OK;
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_READ: {
      // a1 = table, a2 = column.
      std::string table = ascii_lower(str(a1));
      if (readable_.count(table) || is_readable_system_table(table) || is_allowed_table_function(table))
        return SQLITE_OK;
      if (!db && a2 && !*a2) {
        count_probes_.insert(table);
        return SQLITE_OK;
      }
      return deny("READ " + str(a1) + (a2 && *a2 ? "." + str(a2) : ""));
    }
    case SQLITE_FUNCTION: {
      // a1 is always NULL for SQLITE_FUNCTION; the function's name is the second argument.
      std::string name = str(a2);
      if (is_allowed_function(name)) return SQLITE_OK;
      return deny("function " + name + "()");
    }
    case SQLITE_UPDATE:
      // SQLite asks this while creating an eponymous virtual table (json_each) the first time;
      // denied like any write, and reported so the guard can warm the table up and retry.
      if (ascii_lower(str(a1)) == "sqlite_master" && denial_.empty()) eponymous_init_denied_ = true;
      return deny("UPDATE " + str(a1) + (a2 && *a2 ? "." + str(a2) : ""));
    default:
      return deny(std::string(action_name(action)) + (a1 && *a1 ? " " + str(a1) : "") +
                  (a2 && *a2 ? " " + str(a2) : ""));
  }
}

std::set<std::string> Authorizer::schema_objects(sqlite3* db) {
  std::set<std::string> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE "
                         "'sqlite\\_%' ESCAPE '\\'",
                         -1, &st, nullptr) != SQLITE_OK) {
    sqlite3_finalize(st);
    return out;
  }
  while (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* n = sqlite3_column_text(st, 0);
    if (n) out.insert(ascii_lower(reinterpret_cast<const char*>(n)));
  }
  sqlite3_finalize(st);
  return out;
}

}  // namespace causeway::sqlguard

