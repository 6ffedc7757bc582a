// sqlguard/clickhouse_guard.h: what run_sql under `mcp --fleet` refuses before ClickHouse sees
// it, read the way ClickHouse's lexer reads (backslash escapes, nested comments, # comments).
#include <doctest/doctest.h>

#include "sqlguard/clickhouse_guard.h"

using causeway::sqlguard::clickhouse_select;

namespace {
std::string accepted(const std::string& sql) {
  auto r = clickhouse_select(sql);
  REQUIRE_MESSAGE(r.ok(), sql << ": " << (r.ok() ? "" : r.error().message));
  return *r;
}
std::string refused(const std::string& sql) {
  auto r = clickhouse_select(sql);
  REQUIRE_MESSAGE(!r.ok(), sql);
  CHECK(r.error().code == "sql_rejected");
  return r.error().message;
}
}  // namespace

TEST_CASE("one SELECT or WITH, its trailing semicolons and comments cut for the subquery") {
  CHECK(accepted("SELECT 1") == "SELECT 1");
  CHECK(accepted("  select host, count() from events group by host ;; -- done\n") == "  select host, count() from events group by host");
  CHECK(accepted("WITH 2 AS x SELECT x /* a /* nested */ comment */") == "WITH 2 AS x SELECT x");
  CHECK(accepted("SELECT 1 # hash comment ; SET x = 1") == "SELECT 1");
  // Words inside strings and quoted names are data, including after an escaped quote.
  CHECK(accepted("SELECT 'it\\'s; SET x=1 FORMAT TSV' AS s") == "SELECT 'it\\'s; SET x=1 FORMAT TSV' AS s");
  CHECK(accepted("SELECT `format`, \"settings\" FROM t") == "SELECT `format`, \"settings\" FROM t");
  CHECK(accepted("SELECT formatDateTime(now(), '%F')") == "SELECT formatDateTime(now(), '%F')");
}

TEST_CASE("writes, settings, output formats and second statements are refused, naming the token") {
  CHECK(refused("INSERT INTO events VALUES (1)").find("INSERT") != std::string::npos);
  refused("ALTER TABLE events DELETE WHERE 1");
  refused("SET max_execution_time = 1000");
  refused("DROP TABLE events");
  CHECK(refused("SELECT 1; DROP TABLE events").find("one statement") != std::string::npos);
  CHECK(refused("SELECT 1 SETTINGS max_result_rows = 0").find("SETTINGS") != std::string::npos);
  CHECK(refused("SELECT 1 FORMAT TSV").find("FORMAT") != std::string::npos);
  refused("SELECT 1 INTO OUTFILE 'x'");
  refused("");
  refused("-- only a comment");
  refused("SELECT 'never ends");
  refused("SELECT 1 /* never ends");
  refused(std::string("SELECT 1\0", 9));
}

TEST_CASE("system tables: the catalog and constants pass, processes, query_log and the rest of the server do not") {
  // ClickHouse shows system.processes (every user's running query text) and the logs to any
  // user, allow_databases or not (docs/FLEET.md "What a reader can see").
  accepted("SELECT name FROM system.tables WHERE database = currentDatabase()");
  accepted("SELECT name, type FROM `system`.`columns` WHERE table = 'events'");
  accepted("SELECT number FROM system.numbers LIMIT 3");
  accepted("SELECT name FROM system . databases");
  accepted("SELECT value FROM system.settings WHERE name = 'max_execution_time'");
  accepted("SELECT host FROM events WHERE comm = 'system.processes'");  // a string is data
  accepted("SELECT system, processes FROM t");                          // plain names, no database
  CHECK(refused("SELECT user, query FROM system.processes").find("system.PROCESSES") != std::string::npos);
  refused("SELECT query FROM `system`.`processes`");
  refused("SELECT query FROM \"system\".\"query_log\"");
  refused("SELECT * FROM system /* comment */ . /* more */ processes");
  refused("SELECT * FROM SYSTEM.Processes");
  refused("SELECT name FROM system.users");
  refused("SELECT * FROM system.clusters");
  refused("SELECT * FROM system.dictionaries");
  refused("WITH x AS (SELECT * FROM system.query_thread_log) SELECT * FROM x");
  refused("SELECT * FROM events WHERE host IN (SELECT user FROM system.processes)");
}
