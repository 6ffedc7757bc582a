// sqlguard's API: result shape and values, row/byte caps, deadline, cancellation, borrowed
// connections restored, json_each on a fresh connection, and the schema description.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sqlguard/guard.h"
#include "sqlguard/schema_description.h"
#include "tests/unit/test_sqlguard_fixture.h"
#include "tracedb/open.h"

using namespace causeway;
using namespace causeway::sqlguard;
using namespace causeway::test;

namespace {
const char* kRunaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r";
}

TEST_CASE("values come back typed; the JSON shape is docs/INTERFACES.md's") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_guarded_query(db, "SELECT 1 AS i, 1.5 AS f, 'x' AS t, NULL AS n, x'00ff' AS b");
  REQUIRE(r.ok());
  CHECK(r->columns == std::vector<std::string>{"i", "f", "t", "n", "b"});
  REQUIRE(r->rows.size() == 1);
  CHECK(r->rows[0][0] == 1);
  CHECK(r->rows[0][1] == 1.5);
  CHECK(r->rows[0][2] == "x");
  CHECK(r->rows[0][3].is_null());
  CHECK(r->rows[0][4] == "x'00ff'");
  CHECK_FALSE(r->truncated);
  auto j = to_json(*r);
  CHECK(j.contains("columns"));
  CHECK(j.contains("rows"));
  CHECK(j["truncated"] == false);
  CHECK(j["elapsed_ms"].is_number());
}

TEST_CASE("row cap, hard max and byte cap") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto conn = GuardedConnection::open(db);
  REQUIRE(conn.ok());
  const char* many = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 20000) SELECT n FROM r";
  auto def = conn->run(many);
  REQUIRE(def.ok());
  CHECK(def->rows.size() == 1000);
  CHECK(def->truncated);
  CHECK(def->truncated_by == "max_rows");
  QueryLimits l;
  l.max_rows = kMaxRowsHardCap;
  auto max = conn->run(many, l);
  REQUIRE(max.ok());
  CHECK(max->rows.size() == kMaxRowsHardCap);
  l.max_rows = kMaxRowsHardCap + 1;
  CHECK(conn->run(many, l).error().code == "usage");
  l.max_rows = 0;
  CHECK(conn->run(many, l).error().code == "usage");
  l.max_rows = 1000;
  l.max_bytes = 100;
  auto bytes = conn->run("SELECT printf('%.40c', 'x') FROM events", l);
  REQUIRE(bytes.ok());
  CHECK(bytes->rows.size() == 2);
  CHECK(bytes->truncated_by == "max_bytes");
  // Exactly max_rows rows is not truncated.
  l = QueryLimits{};
  l.max_rows = 3;
  auto exact = conn->run("VALUES (1), (2), (3)", l);
  REQUIRE(exact.ok());
  CHECK_FALSE(exact->truncated);
}

TEST_CASE("configurable deadline") {
  TempDir d;
  auto db = make_fixture_db(d);
  QueryLimits l;
  l.deadline_ms = 200;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_guarded_query(db, kRunaway, l);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "sql_timeout");
  CHECK(r.error().message.find("200 ms deadline") != std::string::npos);
  CHECK(ms < 700);
}

TEST_CASE("cancellation through the flag and through interrupt()") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto conn = GuardedConnection::open(db);
  REQUIRE(conn.ok());
  std::atomic<bool> cancel{false};
  QueryLimits l;
  l.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    cancel.store(true);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = conn->run(kRunaway, l);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "sql_cancelled");
  CHECK(ms < 1000);

  std::thread t2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    conn->interrupt();
  });
  auto r2 = conn->run(kRunaway);
  t2.join();
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().code == "sql_cancelled");
  // The connection is still usable afterwards.
  CHECK(conn->run("SELECT 1").ok());
}

TEST_CASE("json_each as the very first query of a connection") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_guarded_query(db, "SELECT j.value FROM stacks s, json_each(s.frames) AS j");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  CHECK(r->rows.size() == 2);
}

TEST_CASE("a borrowed connection gets its settings back") {
  TempDir d;
  auto path = make_fixture_db(d);
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  sqlite3* h = db->get();
  int length_before = sqlite3_limit(h, SQLITE_LIMIT_LENGTH, -1);
  {
    auto conn = GuardedConnection::borrow(h);
    REQUIRE(conn.ok());
    CHECK(sqlite3_limit(h, SQLITE_LIMIT_LENGTH, -1) < length_before);
    CHECK(conn->run("PRAGMA user_version").error().code == "sql_rejected");
    CHECK(conn->run("SELECT count(*) FROM events").ok());
  }
  CHECK(sqlite3_limit(h, SQLITE_LIMIT_LENGTH, -1) == length_before);
  // Authorizer gone: the owner's own PRAGMA works again.
  CHECK(query_int(h, "PRAGMA user_version").ok());
  // The one-shot helper on a borrowed handle.
  CHECK(run_guarded_query(h, "SELECT 1").ok());
}

TEST_CASE("a writable connection is refused by the connection layer") {
  TempDir d;
  auto path = make_fixture_db(d);
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  DbHandle h(raw);
  auto conn = GuardedConnection::borrow(h.get());
  REQUIRE_FALSE(conn.ok());
  CHECK(conn.error().message.find("read-only") != std::string::npos);
}

TEST_CASE("errors: missing DB, syntax, unknown column") {
  TempDir d;
  auto missing = run_guarded_query(d.file("nope.db"), "SELECT 1");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == "db_missing");
  auto db = make_fixture_db(d);
  auto syntax = run_guarded_query(db, "SELECT FROM WHERE");
  REQUIRE_FALSE(syntax.ok());
  CHECK(syntax.error().code == "sql_error");
  auto col = run_guarded_query(db, "SELECT no_such_column FROM events");
  REQUIRE_FALSE(col.ok());
  CHECK(col.error().code == "sql_error");
  CHECK(col.error().message.find("no_such_column") != std::string::npos);
  auto table = run_guarded_query(db, "SELECT * FROM no_such_table");
  REQUIRE_FALSE(table.ok());
  CHECK(table.error().message.find("no_such_table") != std::string::npos);
}

TEST_CASE("trim replacement matches SQLite's semantics") {
  TempDir d;
  auto db = make_fixture_db(d);
  auto r = run_guarded_query(db,
                             "SELECT trim('  a  '), ltrim('xxaxx', 'x'), rtrim('xxaxx', 'x'), trim('abcba', 'ab'), "
                             "trim(NULL), trim('a', NULL), trim('aa', ''), trim('\xc3\xa9" "a\xc3\xa9', '\xc3\xa9'), "
                             "trim(length(printf('%.100000c', 'a')))");
  REQUIRE(r.ok());
  const auto& row = r->rows[0];
  CHECK(row[0] == "a");
  CHECK(row[1] == "axx");
  CHECK(row[2] == "xxa");
  CHECK(row[3] == "c");
  CHECK(row[4].is_null());
  CHECK(row[5].is_null());
  CHECK(row[6] == "aa");
  CHECK(row[7] == "a");
  CHECK(row[8] == "100000");
}

TEST_CASE("schema description from the live DB; every example runs through the guard") {
  TempDir d;
  auto path = make_fixture_db(d);
  auto conn = GuardedConnection::open(path);
  REQUIRE(conn.ok());
  auto desc = describe_schema(conn->handle());
  REQUIRE(desc.ok());
  const auto& objects = (*desc)["objects"];
  REQUIRE(objects.is_array());
  bool found_view = false, found_events = false;
  for (const auto& o : objects) {
    if (o["name"] == "v_calls") {
      found_view = true;
      CHECK(o["type"] == "view");
      CHECK(o.contains("description"));
      bool dur = false;
      for (const auto& c : o["columns"])
        if (c["name"] == "dur_us") dur = c.value("unit", "") == "us";
      CHECK(dur);
    }
    if (o["name"] == "events") found_events = true;
  }
  CHECK(found_view);
  CHECK(found_events);
  CHECK(objects[0]["type"] == "view");  // views first
  REQUIRE((*desc)["examples"].size() >= 8);
  for (const auto& e : (*desc)["examples"]) {
    std::string sql = e["sql"];
    CAPTURE(sql);
    auto r = conn->run(sql);
    CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  }
  std::string text = describe_schema_text(*desc);
  CHECK(text.find("v_calls (view)") != std::string::npos);
  CHECK(text.find("dur_us [us]") != std::string::npos);
  // The guard still holds after describe_schema used the same connection.
  CHECK_FALSE(conn->run("PRAGMA query_only = 0").ok());
}
