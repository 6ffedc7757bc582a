// `causeway query` end to end through the real binary: JSON shape, errors as JSON, `--`,
// --limit, human table with sanitized untrusted text, exit codes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/test_sqlguard_fixture.h"

using namespace causeway;
using namespace causeway::test;
using nlohmann::json;

TEST_CASE("causeway query --json") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_causeway({"query", "--db", db, "--json", "SELECT count(*) AS n FROM events"});
  CHECK(r.exit_code == 0);
  auto j = json::parse(r.out);
  CHECK(j["columns"] == json::array({"n"}));
  CHECK(j["rows"] == json::array({json::array({120})}));
  CHECK(j["truncated"] == false);
  CHECK(j["elapsed_ms"].is_number());
}

TEST_CASE("-- ends options so SQL may start with a comment") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_causeway({"query", "--db", db, "--json", "--", "-- the sessions\nSELECT id FROM sessions"});
  CHECK(r.exit_code == 0);
  CHECK(json::parse(r.out)["rows"].size() == 1);
}

TEST_CASE("errors with --json are one JSON document on stdout and exit non-zero") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto before = read_file(db);
  auto r = run_causeway({"query", "--db", db, "--json", "--", "DROP TABLE events"});
  CHECK(r.exit_code == 1);
  auto j = json::parse(r.out);
  CHECK(j["error"]["code"] == "sql_rejected");
  CHECK(j["error"]["message"].get<std::string>().find("DROP") != std::string::npos);
  CHECK(read_file(db) == before);
  auto missing = run_causeway({"query", "--db", d.file("none.db"), "--json", "SELECT 1"});
  CHECK(missing.exit_code == 1);
  CHECK(json::parse(missing.out)["error"]["code"] == "db_missing");
  CHECK_FALSE(file_exists(d.file("none.db")));
  auto timeout = run_causeway({"query", "--db", db, "--json", "--timeout", "300ms",
                               "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"});
  CHECK(timeout.exit_code == 1);
  CHECK(json::parse(timeout.out)["error"]["code"] == "sql_timeout");
}

TEST_CASE("--limit truncates and says so") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_causeway({"query", "--db", db, "--json", "--limit", "5", "SELECT id FROM events"});
  CHECK(r.exit_code == 0);
  auto j = json::parse(r.out);
  CHECK(j["rows"].size() == 5);
  CHECK(j["truncated"] == true);
  CHECK(run_causeway({"query", "--db", db, "--limit", "10001", "SELECT 1"}).exit_code == 2);
  CHECK(run_causeway({"query", "--db", db, "--limit", "0", "SELECT 1"}).exit_code == 2);
}

TEST_CASE("human table: aligned, untrusted text sanitized") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_causeway({"query", "--db", db, "SELECT pid, comm FROM processes ORDER BY pid"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);  // the ESC in a traced comm is stripped
  CHECK(r.out.find("python3") != std::string::npos);
  CHECK(r.out.find("(2 rows") != std::string::npos);
  // Header and separator lines have the same width.
  auto nl = r.out.find('\n');
  auto nl2 = r.out.find('\n', nl + 1);
  CHECK(r.out.substr(nl + 1, nl2 - nl - 1).find_first_not_of("- ") == std::string::npos);
  auto err = run_causeway({"query", "--db", db, "--", "SELECT 1; DELETE FROM events"});
  CHECK(err.exit_code == 1);
  CHECK(err.err.find("more than one statement") != std::string::npos);
}

TEST_CASE("SQL on stdin and --schema") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_causeway({"query", "--db", db, "--json", "-"}, {}, "SELECT 42 AS answer");
  CHECK(r.exit_code == 0);
  CHECK(json::parse(r.out)["rows"][0][0] == 42);
  auto s = run_causeway({"query", "--db", db, "--schema", "--json"});
  CHECK(s.exit_code == 0);
  CHECK(json::parse(s.out)["objects"].size() > 10);
  auto t = run_causeway({"query", "--db", db, "--schema"});
  CHECK(t.out.find("v_calls (view)") != std::string::npos);
}
