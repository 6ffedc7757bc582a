// SQLite-level gate: an authorizer callback consulted by SQLite itself while it compiles a
// statement, so it sees what the statement really does whatever its spelling. Allows only
// SELECT, reads of known tables and views, allow-listed functions and recursive CTEs;
// denies everything else (writes, ATTACH — which VACUUM INTO also asks for — PRAGMA,
// transactions, DDL).
#pragma once

#include <sqlite3.h>

#include <set>
#include <string>

namespace causeway::sqlguard {

class Authorizer {
 public:
  // readable: tables and views a query may read (lower case); sqlite_master/sqlite_schema
  // and json_each/json_tree are always readable.
  explicit Authorizer(std::set<std::string> readable) : readable_(std::move(readable)) {}

  // Installs the callback on db; it stays dormant until arm(). The Authorizer must outlive
  // the installation (uninstall() or closing db ends it).
  void install(sqlite3* db);
  static void uninstall(sqlite3* db);

  // Armed only while user SQL is prepared: the guard's own statements (pragmas, warm-up)
  // run with it dormant.
  void arm() {
    armed_ = true;
    saw_select_ = false;
    eponymous_init_denied_ = false;
    denial_.clear();
    count_probes_.clear();
    inner_names_.clear();
  }
  void disarm() { armed_ = false; }

  // After preparing: empty when allowed, else what was denied ("PRAGMA query_only", ...).
  // A statement that never asked for SELECT (VACUUM, BEGIN, ...) is denied here too.
  std::string verdict() const;
  // True when the only denial was the UPDATE of sqlite_master that SQLite asks for while it
  // initializes an eponymous virtual table (json_each) for the first time on a connection.
  bool denied_eponymous_init() const { return eponymous_init_denied_ && denial_.rfind("UPDATE sqlite_master", 0) == 0; }

  // Lists every table and view of db's main schema (not sqlite_*), lower case.
  static std::set<std::string> schema_objects(sqlite3* db);

 private:
  static int callback(void* self, int action, const char* a1, const char* a2, const char* db, const char* inner);
  int decide(int action, const char* a1, const char* a2, const char* db, const char* inner);
  int deny(std::string what);

  std::set<std::string> readable_;
  bool armed_ = false;
  bool saw_select_ = false;
  bool eponymous_init_denied_ = false;
  std::string denial_;
  // count(*) makes SQLite report READ of the FROM name with an empty column and no schema,
  // even when that name is a CTE. Such reads of unknown names are held here and allowed at
  // verdict() only if the name was also reported as a CTE (the `inner` argument).
  std::set<std::string> count_probes_;
  std::set<std::string> inner_names_;
};

// Name of an authorizer action code ("SQLITE_INSERT" -> "INSERT"), for messages.
const char* action_name(int action);

}  // namespace causeway::sqlguard
