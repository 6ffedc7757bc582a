// `causeway merge` on real SQLite files (and the zone map it lays out by rows, which the demos
// use too): hosts' sessions combined without collisions, an older
// schema migrated in the copy, inputs untouched, and the refusals (same DB twice, a merged DB,
// a newer schema, an existing output) leave nothing behind.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
#include <tuple>

#include "tests/support/test_support.h"
#include "tracedb/event_blocks.h"
#include "tracedb/merge.h"
#include "tracedb/schema.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

using test::TempDir;
using test::read_file;

DbHandle open_rw(const std::string& path) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  return DbHandle(raw);
}

int64_t q(const std::string& path, const std::string& sql) {
  DbHandle db = open_rw(path);
  auto v = query_int(db.get(), sql);
  REQUIRE(v);
  return v->value_or(-1);
}

// A host's DB at schema `version` with one session, two processes (pids 100 and 200, which
// repeat on every host), three events and a context switch on CPU 1.
void make_host(const std::string& path, const std::string& host, int version, int64_t t0) {
  DbHandle db = open_rw(path);
  REQUIRE(migrate(db.get(), version));
  const std::string T = std::to_string(t0);
  REQUIRE(exec_sql(db.get(),
                   "INSERT INTO ops (id, source, name, kind) VALUES (1, 'cuda', 'cudaMalloc', 'call');"
                   "INSERT INTO sessions (source_kind, host, tool_version, started_ns, stopped_ns) VALUES ('live', '" + host +
                       "', 'x', " + T + ", " + T + " + 3000);"
                       "INSERT INTO processes (session_id, pid, comm) VALUES (1, 100, 'python3'), (1, 200, 'tar');"
                       "INSERT INTO events (session_id, ts_ns, dur_ns, pid, tid, op_id, cpu) VALUES "
                       "(1, " + T + ", 10, 100, 100, 1, 1), (1, " + T + " + 1000, 10, 100, 101, 1, 1), (1, " + T +
                       " + 2000, 10, 200, 200, 1, 0);"
                       "INSERT INTO event_blocks VALUES (1, 1, 3, " + T + ", " + T + " + 2000, " + T + " + 2010);"
                       "INSERT INTO sched (session_id, ts_ns, cpu, prev_tid, prev_pid, prev_state, next_tid, next_pid) "
                       "VALUES (1, " + T + " + 5, 1, 100, 100, 0, 0, 0);")
              .ok());
}

}  // namespace

TEST_CASE("two hosts merge into one session: pids shifted per host, counts add up, inputs untouched") {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db"), out = dir.file("m.db");
  make_host(a, "node-a", latest_schema_version(), 1'000'000);
  make_host(b, "node-b", 2, 1'000'500);  // an older schema: migrated in the copy
  const std::string bytes_a = read_file(a), bytes_b = read_file(b);

  auto m = merge_trace_dbs(out, {a, b});
  REQUIRE_MESSAGE(m, (m ? std::string() : m.error().message));
  CHECK(read_file(a) == bytes_a);
  CHECK(read_file(b) == bytes_b);
  CHECK(m->events == 6);
  CHECK(m->inputs[1].schema_version == 2);
  bool migrated_note = false;
  for (const auto& n : m->notes) migrated_note = migrated_note || n.find("migrated in the copy") != std::string::npos;
  CHECK(migrated_note);

  CHECK(q(out, "PRAGMA user_version") == latest_schema_version());
  CHECK(q(out, "SELECT count(*) FROM sessions") == 1);
  CHECK(q(out, "SELECT count(*) FROM events") == 6);
  CHECK(q(out, "SELECT count(*) FROM processes") == 4);
  CHECK(q(out, "SELECT count(*) FROM processes WHERE pid IN (10000100, 10000200, 20000100, 20000200)") == 4);
  CHECK(q(out, "SELECT count(*) FROM events WHERE tid = 20000101 AND cpu = 20001") == 1);
  // Idle (pid 0) stays 0; CPUs are per host.
  CHECK(q(out, "SELECT count(*) FROM sched WHERE next_pid = 0 AND cpu IN (10001, 20001)") == 2);
  // Events in time order across hosts, with a zone map covering all of them.
  CHECK(q(out, "SELECT count(*) FROM events e1 JOIN events e2 ON e2.id = e1.id + 1 WHERE e2.ts_ns < e1.ts_ns") == 0);
  CHECK(q(out, "SELECT sum(last_id - first_id + 1) FROM event_blocks") == 6);
  CHECK(q(out, "SELECT count(*) FROM merged_hosts WHERE host IN ('node-a', 'node-b')") == 2);
}

TEST_CASE("refusals leave no output: same DB twice, a merged DB, a newer schema, an existing output") {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db"), out = dir.file("m.db");
  make_host(a, "node-a", latest_schema_version(), 1'000'000);
  make_host(b, "node-b", latest_schema_version(), 2'000'000);
  std::filesystem::copy_file(a, dir.file("copy.db"));

  auto twice = merge_trace_dbs(out, {a, dir.file("copy.db")});
  REQUIRE_FALSE(twice);
  CHECK(twice.error().code == "merge_usage");
  CHECK(twice.error().message.find("same DB") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK_FALSE(std::filesystem::exists(out + ".tmp"));

  REQUIRE(merge_trace_dbs(out, {a, b}));
  auto exists = merge_trace_dbs(out, {a, b});
  REQUIRE_FALSE(exists);
  CHECK(exists.error().message.find("exists") != std::string::npos);
  auto nested = merge_trace_dbs(dir.file("m2.db"), {out, b});
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message.find("itself a merged DB") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("m2.db")));

  { DbHandle db = open_rw(b); REQUIRE(exec_sql(db.get(), "PRAGMA user_version = 99").ok()); }
  auto newer = merge_trace_dbs(dir.file("m3.db"), {a, b});
  REQUIRE_FALSE(newer);
  CHECK(newer.error().code == "db_too_new");
  CHECK_FALSE(std::filesystem::exists(dir.file("m3.db")));
}

TEST_CASE("merge carries the hosts' served requests and engine metrics, their server pids shifted") {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db"), old = dir.file("old.db"), out = dir.file("m.db");
  for (const auto& [path, host, t0] : {std::tuple{a, "node-a", 1'000'000}, std::tuple{b, "node-b", 1'000'500}}) {
    make_host(path, host, latest_schema_version(), t0);
    DbHandle db = open_rw(path);
    const std::string T = std::to_string(t0);
    REQUIRE(exec_sql(db.get(),
                     "INSERT INTO requests (session_id, request_id, id_generated, server_pid, fd, method, path, tenant, peer, "
                     "start_ns, end_ns, first_token_ns, last_byte_ns, ttft_ns, e2e_ns, status, prompt_bytes, response_bytes, "
                     "streamed, events, complete) VALUES "
                     "(1, 'r1', 0, 100, 7, 'POST', '/v1/completions', 't', '', " + T + ", " + T + " + 10, " + T + " + 50, " +
                         T + " + 90, 40, 90, 200, 12, 300, 1, 3, 1), "
                         "(1, 'r2', 0, 100, 7, 'POST', '/v1/completions', 't', '', " + T + " + 100, " + T + " + 110, " + T +
                         " + 150, " + T + " + 190, 40, 90, 200, 12, 300, 1, 3, 1);"
                         "INSERT INTO engines VALUES (1, 100, 'vllm', 'http://127.0.0.1:8000/metrics');"
                         "INSERT INTO engine_metrics VALUES (1, " + T + ", 100, 'vllm', 'vllm:num_requests_waiting', '', 2);")
                .ok());
  }
  make_host(old, "node-old", 2, 1'000'700);  // a schema without requests: nothing to carry
  auto m = merge_trace_dbs(out, {a, b, old});
  REQUIRE_MESSAGE(m, (m ? std::string() : m.error().message));
  CHECK(q(out, "SELECT count(*) FROM requests") == 4);
  CHECK(q(out, "SELECT count(*) FROM requests WHERE server_pid = 10000100 AND session_id = 1") == 2);
  CHECK(q(out, "SELECT count(*) FROM requests WHERE server_pid = 20000100 AND request_id = 'r2' AND ttft_ns = 40") == 1);
  CHECK(q(out, "SELECT count(*) FROM engines WHERE pid IN (10000100, 20000100) AND engine = 'vllm'") == 2);
  CHECK(q(out, "SELECT count(*) FROM engine_metrics WHERE pid IN (10000100, 20000100) AND value = 2") == 2);
}

TEST_CASE("the zone map laid out by rows depends on the rows alone, per session") {
  TempDir dir;
  const std::string path = dir.file("z.db");
  DbHandle db = open_rw(path);
  REQUIRE(migrate(db.get(), latest_schema_version()));
  // Session 1: 10 events, ts 100, 200, ... with a long call (dur 5000) at the 4th; session 2's
  // 3 events between them by rowid; a stale block of session 1 as a writer would have cut it.
  std::string sql =
      "INSERT INTO ops (id, source, name, kind) VALUES (1, 'cuda', 'cudaMalloc', 'call');"
      "INSERT INTO sessions (source_kind, host, tool_version, started_ns) VALUES ('demo', 'h', 'x', 0), ('demo', 'h', 'x', 0);";
  for (int i = 1; i <= 10; ++i) {
    sql += "INSERT INTO events (session_id, ts_ns, dur_ns, pid, tid, op_id) VALUES (1, " + std::to_string(i * 100) +
           ", " + (i == 4 ? "5000" : "10") + ", 1, 1, 1);";
    if (i == 5) sql += "INSERT INTO events (session_id, ts_ns, dur_ns, pid, tid, op_id) VALUES (2, 7, 1, 2, 2, 1), (2, 8, 1, 2, 2, 1), (2, 9, 1, 2, 2, 1);";
  }
  sql += "INSERT INTO event_blocks VALUES (1, 1, 13, 100, 1000, 5400), (2, 6, 8, 7, 9, 10);";
  REQUIRE(exec_sql(db.get(), sql).ok());

  REQUIRE(rebuild_event_blocks(db.get(), 1, 4).ok());
  // Blocks span 4 rowids counted from the session's first row (1..4, 5..8, 9..12, 13): session
  // 2's rows inside a span are not its rows (5..8 holds session 1's id 5 alone).
  auto block = [&](int64_t first, const char* col) {
    return q(path, std::string("SELECT ") + col + " FROM event_blocks WHERE session_id = 1 AND first_id = " +
                       std::to_string(first));
  };
  CHECK(q(path, "SELECT count(*) FROM event_blocks WHERE session_id = 1") == 4);
  CHECK(block(1, "last_id") == 4);
  CHECK(block(1, "min_ts") == 100);
  CHECK(block(1, "max_ts") == 400);
  CHECK(block(1, "max_end_ns") == 5400);  // the long call's end
  CHECK(block(5, "last_id") == 5);
  CHECK(block(5, "min_ts") == 500);
  CHECK(block(9, "last_id") == 12);
  CHECK(block(13, "max_ts") == 1000);
  // Session 2's block is left alone; laying out again gives the same map.
  CHECK(q(path, "SELECT count(*) FROM event_blocks WHERE session_id = 2 AND first_id = 6 AND last_id = 8") == 1);
  REQUIRE(rebuild_event_blocks(db.get(), 1, 4).ok());
  CHECK(q(path, "SELECT count(*) FROM event_blocks WHERE session_id = 1") == 4);
  CHECK_FALSE(rebuild_event_blocks(db.get(), 1, 0).ok());
}

}  // namespace causeway
