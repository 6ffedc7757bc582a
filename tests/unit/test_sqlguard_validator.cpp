// Validator alone (no database at all): every static hostile case is refused with the
// offending token named; every legitimate analyst query passes.
#include <doctest/doctest.h>

#include "sqlguard/validator.h"
#include "tests/unit/test_sqlguard_fixture.h"

using namespace causeway;
using namespace causeway::sqlguard;
using causeway::test::load_corpus;

TEST_CASE("validator alone rejects every non-DoS hostile statement") {
  auto cases = load_corpus("hostile.sql", "/nonexistent");
  REQUIRE(cases.size() >= 80);
  int rejected = 0;
  for (const auto& c : cases) {
    if (c.category == "dos") continue;
    CAPTURE(c.name);
    auto r = find_rejection(c.sql);
    CHECK(r.has_value());
    if (!r) continue;
    ++rejected;
    CHECK(r->offset <= c.sql.size());
    CHECK(r->message.find("byte") != std::string::npos);
  }
  MESSAGE("validator rejected " << rejected << " hostile statements");
}

TEST_CASE("validator accepts every legitimate analyst query") {
  auto cases = load_corpus("legit.sql", "/nonexistent");
  REQUIRE(cases.size() >= 40);
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto r = find_rejection(c.sql);
    CHECK_MESSAGE(!r.has_value(), (r ? r->message : std::string()));
  }
}

TEST_CASE("rejections name the token and its byte offset") {
  struct Case {
    const char* sql;
    size_t offset;
    const char* token;
  };
  const Case cases[] = {
      {"DROP TABLE events", 0, "DROP"},
      {"SELECT 1; DELETE FROM events", 10, "DELETE"},
      {"SELECT load_extension('x')", 7, "load_extension"},
      {"SELECT \"readfile\"('/etc/passwd')", 7, "\"readfile\""},
      {"SELECT * FROM dbstat", 14, "dbstat"},
      {"WITH x AS (SELECT 1) DELETE FROM events", 21, "DELETE"},
      {"SELECT 1 FROM t WHERE a IN (SELECT b FROM c RETURNING d)", 44, "RETURNING"},
      {"SELECT nosuchfunc(1)", 7, "nosuchfunc"},
      {"SELECT ?1", 7, "?1"},
      {"EXPLAIN QUERY PLAN DELETE FROM x", 19, "DELETE"},
      {"SELECT 1 FROM sqlite_dbpage", 14, "sqlite_dbpage"},
      {"SELECT * FROM pragma_table_info('events')", 14, "pragma_table_info"},
      {"SELECT replace FROM t", 7, "replace"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.sql);
    auto r = find_rejection(c.sql);
    REQUIRE(r);
    CHECK(r->offset == c.offset);
    CHECK(r->token == c.token);
    CHECK(r->message.find("byte " + std::to_string(c.offset)) != std::string::npos);
  }
}

TEST_CASE("statement shapes") {
  CHECK_FALSE(find_rejection("SELECT 1;"));
  CHECK_FALSE(find_rejection("SELECT 1;;"));
  CHECK_FALSE(find_rejection("  \n-- just a note\nSELECT 1 -- end"));
  CHECK(find_rejection(""));
  CHECK(find_rejection("-- only a comment"));
  CHECK(find_rejection(";"));
  CHECK(find_rejection("EXPLAIN"));
  CHECK(find_rejection("EXPLAIN QUERY SELECT 1"));
  CHECK_FALSE(find_rejection("EXPLAIN QUERY PLAN WITH a AS (SELECT 1) SELECT * FROM a"));
  CHECK_FALSE(find_rejection("WITH a AS NOT MATERIALIZED (SELECT 1) VALUES (1)"));
  CHECK(find_rejection("WITH a AS (SELECT 1)"));
  // A function wrapped to look like a CTE name is still a function call.
  CHECK(find_rejection("SELECT a, load_extension('x') AS y FROM t"));
  CHECK_FALSE(find_rejection("WITH RECURSIVE a(n) AS (SELECT 1), b AS (SELECT 2) SELECT * FROM a, b"));
  CHECK_FALSE(find_rejection("SELECT CAST(x AS NUMERIC(10, 2)) FROM t"));
  CHECK(find_rejection("SELECT CAST(x AS INT), randomblob(10) FROM t"));
}

TEST_CASE("size limit") {
  std::string big = "SELECT 1" + std::string(kMaxSqlBytes, ' ');
  auto r = find_rejection(big);
  REQUIRE(r);
  CHECK(r->message.find("limit") != std::string::npos);
}

TEST_CASE("validate_sql reports sql_rejected") {
  auto r = validate_sql("DELETE FROM events");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "sql_rejected");
}
