// `causeway import ingero` on files that are not ingero traces: refused with a clear message,
// the trace DB untouched (byte for byte) or not created at all. And a hand-made ingero file of
// an older layout (no arg/stack/cgroup columns, an op missing from its dictionary, a source we
// do not know) imports with every row kept.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using causeway::test::TempDir;
using nlohmann::json;

namespace {

void make_sqlite(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  DbHandle db(raw);
  REQUIRE(exec_sql(db.get(), sql).ok());
}

std::string bytes_of(const std::string& path) { return test::read_file(path); }

// The demo DB's bytes plus its -wal, if any: "unchanged" covers both.
std::string db_state(const std::string& path) {
  std::string s = bytes_of(path);
  if (test::file_exists(path + "-wal")) s += bytes_of(path + "-wal");
  return s;
}

}  // namespace

TEST_CASE("foreign and malformed files are refused, the trace DB unchanged") {
  TempDir dir;
  const std::string db = dir.file("trace.db");
  DemoOptions demo;
  demo.scenario = "quiet";
  REQUIRE(run_demo(db, demo).ok());
  const std::string before = db_state(db);

  const std::string text = dir.file("notes.txt");
  std::ofstream(text) << "this is not a database\n";
  const std::string foreign = dir.file("foreign.db");
  make_sqlite(foreign, "CREATE TABLE users (id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');");
  const std::string no_ops = dir.file("no_ops.db");
  make_sqlite(no_ops, "CREATE TABLE events (id INTEGER, timestamp INTEGER, pid INTEGER, tid INTEGER, source INTEGER, "
                      "op INTEGER, duration INTEGER); CREATE TABLE sources (id INTEGER, name TEXT);");
  const std::string no_ts = dir.file("no_ts.db");
  make_sqlite(no_ts, "CREATE TABLE events (id INTEGER, pid INTEGER, tid INTEGER, source INTEGER, op INTEGER, duration INTEGER);"
                     "CREATE TABLE sources (id INTEGER, name TEXT); CREATE TABLE ops (source_id INTEGER, op_id INTEGER, name TEXT);");
  const std::string empty = dir.file("empty.db");
  std::ofstream(empty).close();

  struct Case {
    std::string file, expect;
  };
  for (const Case& c : {Case{text, "not a SQLite database"}, Case{foreign, "not an ingero trace"},
                        Case{no_ops, "no 'ops' table"}, Case{no_ts, "no column 'timestamp'"},
                        Case{db, "is a causeway trace DB"}, Case{empty, "not an ingero trace"},
                        Case{dir.file("missing.db"), "no such file"}}) {
    CAPTURE(c.file);
    auto r = test::run_causeway({"import", "ingero", c.file, "--db", db});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(c.expect) != std::string::npos);
    INFO(r.err);
    CHECK(db_state(db) == before);
  }
  // With --json the refusal is one JSON error document on stdout.
  auto j = test::run_causeway({"import", "ingero", foreign, "--db", db, "--json"});
  CHECK(j.exit_code == 1);
  CHECK(json::parse(j.out)["error"]["code"] == "import_foreign");
  // A refused import never creates the DB.
  const std::string fresh = dir.file("never.db");
  CHECK(test::run_causeway({"import", "ingero", foreign, "--db", fresh}).exit_code == 1);
  CHECK_FALSE(test::file_exists(fresh));
  // Usage errors: unknown format.
  CHECK(test::run_causeway({"import", "nsys", foreign, "--db", db}).exit_code == 2);
}

TEST_CASE("an older ingero layout imports: missing columns read as 0, unknown ops kept by name") {
  TempDir dir;
  const std::string file = dir.file("old.db");
  make_sqlite(file,
              "CREATE TABLE sources (id INTEGER PRIMARY KEY, name TEXT NOT NULL, description TEXT);"
              "CREATE TABLE ops (source_id INTEGER, op_id INTEGER, name TEXT, description TEXT);"
              "INSERT INTO sources VALUES (1, 'CUDA', ''), (3, 'HOST', ''), (9, 'GRAPHX', '');"
              "INSERT INTO ops VALUES (1, 2, 'cudaFree', ''), (1, 5, 'cudaStreamSync', ''), (1, 40, 'cudaFancyNew', ''),"
              "  (3, 1, 'sched_switch', '');"
              "CREATE TABLE events (id INTEGER PRIMARY KEY, timestamp INTEGER, pid INTEGER, tid INTEGER, source INTEGER,"
              "  op INTEGER, duration INTEGER);"
              "INSERT INTO events (timestamp, pid, tid, source, op, duration) VALUES"
              "  (1790000000000000000, 10, 10, 1, 2, 400000), (1790000000001000000, 10, 10, 1, 5, 20000),"
              "  (1790000000002000000, 10, 11, 1, 40, 5000), (1790000000003000000, 10, 10, 3, 1, 250000),"
              "  (1790000000004000000, 10, 10, 1, 77, 100), (1790000000005000000, 10, 10, 9, 3, 0);");
  const std::string db = dir.file("t.db");
  auto r = test::run_causeway({"import", "ingero", file, "--db", db, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  json s = json::parse(r.out);
  CHECK(s["events"] == 6);
  auto h = open_read_only(db);
  REQUIRE(h.ok());
  auto count = [&](const std::string& where) {
    auto n = query_int(h->get(), "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE " + where);
    REQUIRE(n.ok());
    return n->value_or(-1);
  };
  CHECK(count("o.name = 'cudaFree' AND o.id < 10000") == 1);
  CHECK(count("o.name = 'cudaStreamSynchronize' AND o.id < 10000") == 1);  // ingero's short name mapped
  CHECK(count("o.name = 'cudaFancyNew' AND o.source = 'cuda' AND o.id >= 10000") == 1);
  CHECK(count("o.name = 'CUDA_op77' AND o.id >= 10000") == 1);             // not in the file's dictionary
  CHECK(count("o.name = 'GRAPHX_op3' AND o.source = 'host'") == 1);        // unknown source
  // ingero stamps sched_switch when the thread comes back: our row starts dur earlier.
  CHECK(count("o.name = 'sched_switch' AND e.ts_ns = 1790000000003000000 - 250000 AND e.dur_ns = 250000") == 1);
  CHECK(count("e.a0 = 0 AND e.stack_id IS NULL") == 6);
}
