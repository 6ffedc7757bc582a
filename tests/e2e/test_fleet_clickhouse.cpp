// The fleet store end to end with a real clickhouse-server (tests/e2e/clickhouse_fixture.h):
//   two hosts: the NCCL late-rank demo split into two hosts' DBs (ranks 0-1 on node-a, 2-3 on
//     node-b; their chains removed, so only the store can see the straggler), shipped by the
//     writer; explain --fleet as the read-only user names rank 2 and node-b; stats --fleet and
//     requests --fleet agree with each host's own command, every events column sums as in the
//     host's DB; every block ship stored was already in the store's sort order (the server
//     counts them: system.events); a second ship sends nothing.
//   failures: the server killed mid-ship (ship exits 1 within seconds; after a restart the next
//     ship leaves every row exactly once), a batch stored without its progress row, the
//     reader used for ship, a wrong password, a closed port and a store made by a newer causeway.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "tests/e2e/clickhouse_fixture.h"
#include "fleet/fleet_query.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::test {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

ClickHouseServer& ch() { return running_server(); }

std::vector<std::string> as_writer(const std::string& db) {
  return {"--user", "causeway_writer", "--password-file", ch().writer_pw_file(), "--database", db};
}
std::vector<std::string> as_reader(const std::string& db) {
  return {"--user", "causeway_reader", "--password-file", ch().reader_pw_file(), "--database", db};
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ProcessResult ship(const std::string& db_file, const std::string& database, const std::string& url = "") {
  return run_causeway(cat({"ship", "--json", "--to", url.empty() ? ch().url() : url, "--db", db_file}, as_writer(database)));
}

json ship_ok(const std::string& db_file, const std::string& database) {
  auto r = ship(db_file, database);
  INFO(r.err, r.out);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

json read_fleet(const std::string& cmd, const std::string& database, std::vector<std::string> extra = {}) {
  auto r = run_causeway(cat(cat({cmd, "--json", "--fleet", ch().url()}, as_reader(database)), extra));
  INFO(r.err, r.out);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

json local(const std::vector<std::string>& args) {
  auto r = run_causeway(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

int64_t sqlite_count(const std::string& file, const std::string& sql) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  DbHandle db(raw);
  auto v = query_int(db.get(), sql);
  REQUIRE(v);
  return v->value_or(-1);
}

void sqlite_exec(const std::string& file, const std::string& sql) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &raw) == SQLITE_OK);
  DbHandle db(raw);
  auto r = exec_sql(db.get(), sql);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
}

// One host of the split demo job: only its two ranks' rows, its own name and boot id, and no
// chains (the demo diagnosed the whole job on one host; here only the store sees both halves).
// Plus 40 served requests, so requests --fleet has something to compare.
void make_host(const std::string& demo, const std::string& out, const std::string& host, const std::string& other_pids) {
  std::filesystem::copy_file(demo, out);
  sqlite_exec(out, "DELETE FROM events WHERE pid IN (" + other_pids + "); DELETE FROM processes WHERE pid IN (" + other_pids +
                       "); DELETE FROM threads WHERE pid IN (" + other_pids + "); DELETE FROM rollups WHERE pid IN (" + other_pids + "); DELETE FROM sched WHERE prev_pid IN (" +
                       other_pids + ") OR next_pid IN (" + other_pids + "); DELETE FROM chains; DELETE FROM call_causes; "
                       "UPDATE sessions SET host = '" + host + "', boot_id = 'boot-" + host + "', system = json_set(system, "
                       "'$.hostname', '" + host + "'); "
                       // the demo job writes no wakeups: some, with and without a known waker
                       "INSERT INTO wakeups (session_id, ts_ns, tid, pid, waker_tid, waker_pid, target_cpu) SELECT session_id, "
                       "ts_ns - 4000, tid, pid, CASE WHEN id % 3 THEN tid + 1 END, CASE WHEN id % 3 THEN pid END, id % 4 "
                       "FROM events WHERE id % 97 = 0;");
  std::string rows;
  for (int i = 0; i < 40; ++i) {
    const std::string st = "(SELECT min(ts_ns) FROM events) + " + std::to_string(i) + " * 100000000";
    const std::string ttft = std::to_string(5'000'000 + (i * 7919 % 40) * 1'000'000), gap = std::to_string(10 + i % 7);
    rows += std::string(rows.empty() ? "" : ",") + "(1, '" + host + "-" + std::to_string(i) + "', 0, 6001, 9, 'POST', '/v1/chat', 't" +
            std::to_string(i % 2) + "', '10.0.0.9:1', " + st + ", " + st + " + 1000, NULL, NULL, NULL, " + ttft + ", " + ttft +
            " + 5000000, " + gap + "000, '[" + gap + "," + gap + "]', " + (i % 10 == 0 ? "503" : "200") + ", 10, 20, 1, 2, 1, " +
            // TLS on every fourth; an API wait of 0-4 ms after the last byte arrived (docs/INFERENCE.md "Arrival time")
            (i % 4 == 0 ? "1" : "0") + ", " + st + " + 1000 + " + std::to_string(i % 5) + "000000, " + std::to_string(i % 5) + "000000)";
  }
  sqlite_exec(out, "INSERT INTO requests (session_id, request_id, id_generated, server_pid, fd, method, path, tenant, peer, "
                   "start_ns, end_ns, first_byte_ns, first_token_ns, last_byte_ns, ttft_ns, e2e_ns, itl_max_ns, itl_us, status, "
                   "prompt_bytes, response_bytes, streamed, events, complete, tls, read_end_ns, api_wait_ns) VALUES " + rows);
}

// Calls per op of one host, from its own `stats --json`.
std::map<std::string, int64_t> calls_by_op(const json& stats, const std::string& host = "") {
  std::map<std::string, int64_t> out;
  for (const auto& o : stats["ops"])
    if (host.empty() || o.value("host", "") == host) out[o["op"].get<std::string>()] += o["count"].get<int64_t>();
  return out;
}

// The NCCL late-rank demo split into two hosts' DBs: node-a (ranks 0-1), node-b (ranks 2-3).
// job_sql: run on the whole job's DB before it is split.
void make_two_hosts(const TempDir& dir, std::string& a, std::string& b, const std::string& job_sql = "") {
  const std::string demo = dir.file("job.db");
  a = dir.file("node-a.db");
  b = dir.file("node-b.db");
  REQUIRE(run_causeway({"demo", "nccl-straggler", "--db", demo, "-q"}).exit_code == 0);
  if (!job_sql.empty()) sqlite_exec(demo, job_sql);
  make_host(demo, a, "node-a", "6003, 6004");
  make_host(demo, b, "node-b", "6001, 6002");
}

// The split job as traced after every rank's ncclCommInitRank (docs/DIAGNOSIS.md "Ranks without
// init"): no init call, every collective with its process's own communicator handle and rank -1,
// the ranks known only from the launcher's environment (RANK, WORLD_SIZE, a job id) in
// `processes`. Blocking collectives, as NCCL's are for the host thread that waits: every rank
// of a group returns together, 30 µs after the last one entered (what ship's alignment of
// sequences reads, like the correlator's).
const char* const kCollective = "op_id IN (SELECT id FROM ops WHERE family = 'collective')";
void make_two_hosts_without_init(const TempDir& dir, std::string& a, std::string& b) {
  const std::string coll = kCollective;
  make_two_hosts(dir, a, b,
                 "CREATE TEMP TABLE g AS SELECT a1, a4, max(ts_ns) AS last FROM events WHERE " + coll + " GROUP BY a1, a4; "
                 "CREATE INDEX temp.g_key ON g (a1, a4); "
                 "UPDATE events SET dur_ns = (SELECT last FROM g WHERE g.a1 = events.a1 AND g.a4 = events.a4) + 30000 - ts_ns "
                 "WHERE " + coll + "; "
                 "DELETE FROM events WHERE op_id IN (SELECT id FROM ops WHERE name = 'ncclCommInitRank'); "
                 "UPDATE events SET a1 = 140000000000000 + pid * 4096, a2 = -1 WHERE " + coll + "; "
                 "UPDATE processes SET rank = pid - 6001, world_size = 4, local_rank = (pid - 6001) % 2, rank_source = 'RANK', "
                 "job_id = 'job-42' WHERE pid BETWEEN 6001 AND 6004;");
}

// The store's cross-host straggler chain of the split job: rank 2 (pid 6003) on node-b.
json late_rank_2_on_node_b(const json& explain) {
  json straggler;
  for (const auto& c : explain["chains"])
    if (c["cause"] == "nccl_straggler") straggler = c;
  REQUIRE_MESSAGE(!straggler.is_null(), explain.dump());
  CHECK(straggler["culprit"]["host"] == "node-b");
  CHECK(straggler["culprit"]["rank"] == 2);
  CHECK(straggler["culprit"]["pid"] == 6003);
  return straggler;
}

}  // namespace

TEST_CASE("two hosts shipped: the fleet names the late rank and its host; readers agree with each host; a second ship sends nothing") {
  TempDir dir;
  const std::string db = "fleet_two";
  std::string a, b;
  make_two_hosts(dir, a, b);

  // The trace DB's rows come in rowid order, where a call's start (ts_ns) steps back now and
  // then; ship sends each batch in the store's sort order, so the server stores every block
  // without sorting it (docs/FLEET.md "Shipping speed").
  CHECK(sqlite_count(a, "SELECT count(*) FROM (SELECT ts_ns < lag(ts_ns) OVER (ORDER BY id) AS back FROM events) WHERE back") > 0);
  auto blocks = [] { return ch().number("SELECT sum(value) FROM system.events WHERE event = 'MergeTreeDataWriterBlocks'"); };
  auto sorted = [] {
    return ch().number("SELECT sum(value) FROM system.events WHERE event = 'MergeTreeDataWriterBlocksAlreadySorted'");
  };
  const int64_t blocks_before = blocks(), sorted_before = sorted();
  json sa = ship_ok(a, db), sb = ship_ok(b, db);
  CHECK(blocks() - blocks_before > 0);
  CHECK(sorted() - sorted_before == blocks() - blocks_before);
  CHECK(sa["host"] == "node-a");
  CHECK(sa["rows"]["events"] == sqlite_count(a, "SELECT count(*) FROM events"));
  CHECK(sb["rows"]["events"] == sqlite_count(b, "SELECT count(*) FROM events"));
  CHECK(sb["rows"]["sched"] == sqlite_count(b, "SELECT count(*) FROM sched"));
  CHECK(sa["rows"]["requests"] == 40);
  // Wakeups, rollups and stacks too, every row once (the demo job has all three).
  for (const char* t : {"wakeups", "rollups", "stacks"}) {
    INFO(t);
    CHECK(sqlite_count(a, std::string("SELECT count(*) FROM ") + t) > 0);
    CHECK(sa["rows"][t] == sqlite_count(a, std::string("SELECT count(*) FROM ") + t));
    CHECK(sb["rows"][t] == sqlite_count(b, std::string("SELECT count(*) FROM ") + t));
    CHECK(ch().number(std::string("SELECT count() FROM fleet_two.") + t) == sa["rows"][t].get<int64_t>() + sb["rows"][t].get<int64_t>());
  }
  CHECK(ch().number("SELECT sum(count) FROM fleet_two.rollups WHERE host = 'node-a'") == sqlite_count(a, "SELECT sum(count) FROM rollups"));
  CHECK(ch().number("SELECT count(waker_pid) FROM fleet_two.wakeups WHERE host = 'node-b'") ==
        sqlite_count(b, "SELECT count(waker_pid) FROM wakeups"));
  CHECK(ch().number("SELECT sum(length(hist)) FROM fleet_two.rollups WHERE host = 'node-b'") ==
        sqlite_count(b, "SELECT sum(length(hist)) FROM rollups"));
  // A call's stack is found in the store by its id under the same host key.
  CHECK(ch().number("SELECT count() FROM fleet_two.events e ANY INNER JOIN (SELECT host, src_id AS stack_id FROM fleet_two.stacks) "
                    "s USING (host, stack_id)") == sqlite_count(a, "SELECT count(*) FROM events WHERE stack_id IS NOT NULL") +
                                                     sqlite_count(b, "SELECT count(*) FROM events WHERE stack_id IS NOT NULL"));
  const int64_t events = sqlite_count(a, "SELECT count(*) FROM events") + sqlite_count(b, "SELECT count(*) FROM events");
  CHECK(ch().number("SELECT count() FROM fleet_two.events") == events);
  // Every column arrives as the trace DB holds it (ship's Native blocks, NULLs included).
  for (const auto& [file, host] : {std::pair{a, "node-a"}, std::pair{b, "node-b"}})
    for (const char* e : {"count(cpu)", "sum(dur_ns)", "sum(ts_ns % 1000003)", "sum(coalesce(cpu, -1))", "sum(a1 IS NULL)",
                          "sum(coalesce(a1, 0) % 1000003)", "sum(coalesce(a2, 7))", "sum(coalesce(a4, 0))", "sum(ret)",
                          "sum(stack_id IS NULL)", "sum(coalesce(stack_id, 0) % 1000003)", "sum(cgroup_id IS NULL)"}) {
      INFO(host, " ", e);
      CHECK(ch().number(std::string("SELECT ") + e + " FROM fleet_two.events WHERE host = '" + host + "'") ==
            sqlite_count(file, std::string("SELECT ") + e + " FROM events"));
    }

  // explain --fleet, as the read-only user: the cross-host straggler from the store.
  json ex = read_fleet("explain", db);
  json straggler = late_rank_2_on_node_b(ex);
  CHECK(straggler["severity"] == "HIGH");
  CHECK(straggler["culprit"]["late_share"].get<double>() > 0.9);
  std::set<std::string> victim_hosts;
  for (const auto& v : straggler["victims"]) victim_hosts.insert(v["host"].get<std::string>());
  CHECK(victim_hosts == std::set<std::string>{"node-a", "node-b"});
  CHECK(ex["hosts"].size() == 2);
  auto text = run_causeway(cat({"explain", "--fleet", ch().url()}, as_reader(db)));
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("rank 2 (pid 6003 on host node-b)") != std::string::npos);

  // stats --fleet: per host, the same calls per op as that host's own stats.
  json fs = read_fleet("stats", db);
  CHECK(calls_by_op(fs, "node-a") == calls_by_op(local({"stats", "--json", "--db", a})));
  CHECK(calls_by_op(fs, "node-b") == calls_by_op(local({"stats", "--json", "--db", b})));
  for (const auto& o : fs["ops"]) CHECK(o.contains("host"));

  // requests --fleet: counts and errors add up; each host's by[] rows match its own command.
  json fr = read_fleet("requests", db)["requests"];
  json ra = local({"requests", "--json", "--db", a})["requests"], rb = local({"requests", "--json", "--db", b})["requests"];
  CHECK(fr["count"] == ra["count"].get<int64_t>() + rb["count"].get<int64_t>());
  CHECK(fr["errors"] == ra["errors"].get<int64_t>() + rb["errors"].get<int64_t>());
  // tls, read_end_ns and the API wait shipped as stored; the wait's percentiles as each host's.
  CHECK(ch().number("SELECT count() FROM fleet_two.requests WHERE tls = 1") == 20);
  CHECK(ch().number("SELECT count() FROM fleet_two.requests WHERE read_end_ns - end_ns != api_wait_ns") == 0);
  CHECK(ch().number("SELECT sum(api_wait_ns) FROM fleet_two.requests") == 2 * 8 * (1 + 2 + 3 + 4) * 1'000'000);
  CHECK(fr["api_wait_ms"]["max"] == 4.0);
  CHECK(fr["api_wait_ms"]["p50"] == ra["api_wait_ms"]["p50"]);  // both hosts hold the same 40 waits
  CHECK(fr["api_wait_ms"]["p50"] == 2.0);
  REQUIRE(!fr["slowest"].empty());
  CHECK(fr["slowest"][0]["api_wait_ms"].is_number());
  CHECK(fr["slowest"][0].contains("tls"));
  for (const auto& by : fr["by"]) {
    const json& own = by["host"] == "node-a" ? ra : rb;
    bool matched = false;
    for (const auto& o : own["by"])
      if (o["tenant"] == by["tenant"] && o["path"] == by["path"]) {
        matched = true;
        CHECK(o["count"] == by["count"]);
        CHECK(o["ttft_ms"] == by["ttft_ms"]);
        CHECK(o["itl_ms"] == by["itl_ms"]);
      }
    CHECK(matched);
  }

  // A second ship of both: nothing sent, the same counts (plain and folded by the replace key).
  const int64_t sessions = ch().number("SELECT count() FROM fleet_two.sessions FINAL");
  const int64_t chains_rows = ch().number("SELECT count() FROM fleet_two.processes");
  for (const auto& f : {a, b}) {
    json again = ship_ok(f, db);
    for (const auto& [table, n] : again["rows"].items()) CHECK_MESSAGE(n == 0, table);
  }
  CHECK(ch().number("SELECT count() FROM fleet_two.events") == events);
  CHECK(ch().number("SELECT count() FROM fleet_two.events FINAL") == events);
  CHECK(ch().number("SELECT count() FROM fleet_two.sessions FINAL") == sessions);
  CHECK(ch().number("SELECT count() FROM fleet_two.processes") == chains_rows);
  CHECK(sessions == 2);
}

// Ranks traced after their ncclCommInitRank (make_two_hosts_without_init).
// Matched by (comm, seq) as stored, no group would span the hosts; ship resolves each entry to
// the job's communicator as the host's correlator does, so the store finds rank 2 on node-b.
TEST_CASE("requests --fleet: every shipped request, those before a host's first call and a host that shipped no call") {
  TempDir dir;
  const std::string db = "fleet_requests_window";
  // The demo's first request starts with its session, before the engine's first traced call.
  const std::string served = dir.file("served.db"), http_only = dir.file("http-only.db");
  REQUIRE(run_causeway({"demo", "requests-prefill", "--db", served, "--seed", "1"}).exit_code == 0);
  CHECK(sqlite_count(served, "SELECT (SELECT min(start_ns) FROM requests) < (SELECT min(ts_ns) FROM events)") == 1);
  // A server traced with --http-port only: requests, no call (another host).
  REQUIRE(run_causeway({"demo", "requests-quiet", "--db", http_only, "--seed", "2"}).exit_code == 0);
  sqlite_exec(http_only, "DELETE FROM events; DELETE FROM event_blocks; DELETE FROM rollups; DELETE FROM chains; "
                         "DELETE FROM call_causes; UPDATE sessions SET host = 'http-only', boot_id = 'boot-http-only', "
                         "system = json_set(system, '$.hostname', 'http-only')");
  const int64_t served_n = local({"requests", "--json", "--db", served})["requests"]["count"].get<int64_t>();
  const int64_t http_n = local({"requests", "--json", "--db", http_only})["requests"]["count"].get<int64_t>();
  REQUIRE(http_n > 0);

  ship_ok(http_only, db);
  json only = read_fleet("requests", db)["requests"];  // the store holds requests and no event
  CHECK(only["count"] == http_n);
  ship_ok(served, db);
  json both = read_fleet("requests", db)["requests"];
  CHECK(both["count"] == served_n + http_n);
  CHECK(ch().number("SELECT count() FROM fleet_requests_window.requests") == served_n + http_n);
}

TEST_CASE("ranks attached after init: ship resolves them and the store matches them across hosts") {
  TempDir dir;
  const std::string db = "fleet_noinit";
  std::string a, b;
  make_two_hosts_without_init(dir, a, b);
  REQUIRE(sqlite_count(a, "SELECT count(DISTINCT a1) FROM events WHERE op_id IN (SELECT id FROM ops WHERE family = 'collective')") == 2);
  ship_ok(a, db);
  ship_ok(b, db);
  const int64_t entries = sqlite_count(a, "SELECT count(*) FROM events WHERE op_id IN (SELECT id FROM ops WHERE family = 'collective')") +
                          sqlite_count(b, "SELECT count(*) FROM events WHERE op_id IN (SELECT id FROM ops WHERE family = 'collective')");
  CHECK(ch().number("SELECT count() FROM fleet_noinit.collectives") == entries);
  CHECK(ch().number("SELECT uniqExact(comm) FROM fleet_noinit.collectives") == 1);  // one job communicator on both hosts
  CHECK(ch().number("SELECT countIf(rank_source = 'RANK') FROM fleet_noinit.collectives") == entries);
  json ex = read_fleet("explain", db);
  json straggler = late_rank_2_on_node_b(ex);
  CHECK(straggler["victims"].size() == 3);
  // A second ship: the numbering is read back from the store, nothing is sent.
  json again = ship_ok(b, db);
  CHECK(again["rows"]["collectives"] == 0);
  CHECK(ch().number("SELECT count() FROM fleet_noinit.collectives") == entries);

  // The same store as a causeway of fleet schema 2 left it (collectives without the traced
  // handle and sequence): the readers refuse it with fleet_too_old; one ship upgrades it, and
  // that ship and the next number the ranks as before.
  auto w = ch().writer(db);
  REQUIRE(w.execute("ALTER TABLE fleet_noinit.collectives DROP COLUMN handle, DROP COLUMN traced_seq"));
  REQUIRE(w.execute("DROP TABLE fleet_noinit.schema_version"));
  REQUIRE(w.execute("CREATE TABLE fleet_noinit.schema_version (version UInt32, tool_version String, created_ns Int64) "
                    "ENGINE = MergeTree ORDER BY version"));
  REQUIRE(w.execute("INSERT INTO fleet_noinit.schema_version VALUES (2, 'old', 0)"));
  auto old = run_causeway(cat({"explain", "--json", "--fleet", ch().url()}, as_reader(db)));
  CHECK(old.exit_code == 1);
  CHECK(json::parse(old.out)["error"]["code"] == "fleet_too_old");
  json upgraded = ship_ok(a, db);
  CHECK(upgraded["rows"]["collectives"] == 0);
  CHECK(ch().number("SELECT count() FROM system.columns WHERE database = 'fleet_noinit' AND table = 'collectives' "
                    "AND name IN ('handle', 'traced_seq')") == 2);
  late_rank_2_on_node_b(read_fleet("explain", db));
}

// Hosts whose tracers attached at different points of the job: node-b's started 100
// all-reduces after node-a's, so its ranks count sequences from there. Shipped in either
// order or both at once, the second host's ranks are aligned to the numbering the first one stored (by the
// return times of their first calls), every collective is one group across both hosts, and the
// store names rank 2 on node-b.
TEST_CASE("a host attached later: its sequences are aligned across hosts in the store, whichever ships first") {
  TempDir dir;
  std::string a, b;
  make_two_hosts_without_init(dir, a, b);
  const std::string coll = kCollective;
  sqlite_exec(b, "DELETE FROM events WHERE " + coll + " AND a4 <= 100; UPDATE events SET a4 = a4 - 100 WHERE " + coll + ";");
  const int64_t b_entries = sqlite_count(b, "SELECT count(*) FROM events WHERE " + coll);
  // In turn (either order), and both at once: node-b (no rank 0) then waits for the numbering
  // node-a (rank 0) stores instead of starting its own.
  for (const auto& [db, first, second] :
       {std::tuple{"fleet_late_ab", a, b}, std::tuple{"fleet_late_ba", b, a}, std::tuple{"fleet_late_both", a, b}}) {
    const std::string d = db;
    INFO(d);
    if (d == "fleet_late_both") {
      ProcessResult rb;
      std::thread other([&, second = second] { rb = ship(second, d); });
      ship_ok(first, d);
      other.join();
      INFO(rb.err, rb.out);
      REQUIRE(rb.exit_code == 0);
    } else {
      ship_ok(first, d);
      ship_ok(second, d);
    }
    // node-a's numbering is node-b's traced one + 100, whichever numbering the store kept.
    CHECK(ch().number("SELECT uniqExact(seq - traced_seq) FROM " + d + ".collectives WHERE host = 'node-b'") == 1);
    CHECK(ch().number("SELECT uniqExact(seq - traced_seq) FROM " + d + ".collectives WHERE host = 'node-a'") == 1);
    CHECK(ch().number("SELECT any(seq - traced_seq) FROM " + d + ".collectives WHERE host = 'node-b'") -
              ch().number("SELECT any(seq - traced_seq) FROM " + d + ".collectives WHERE host = 'node-a'") ==
          100);
    // Every node-b entry is in a group with node-a's two ranks.
    CHECK(ch().number("SELECT sum(n) FROM (SELECT count() AS n FROM " + d + ".collectives GROUP BY comm, seq, op_id "
                      "HAVING uniqExact(host) = 2 AND n = 4) ") == b_entries * 2);
    late_rank_2_on_node_b(read_fleet("explain", d));
  }
}

// mcp --fleet with the official MCP SDK client (tests/e2e/mcp_fleet.test.mjs) over this store:
// the local tool list, the late rank's host from get_causal_chains, run_sql's ClickHouse SQL
// and its refusals, and the tools that need a host DB. Run only by its own CTest entry
// (tests/e2e/fleet.cmake sets CAUSEWAY_FLEET_MCP_CASE), which exits 77 — Skipped, with the
// reason — without the npm packages.
bool mcp_case_entry() {
  if (!std::getenv("CAUSEWAY_FLEET_MCP_CASE")) return false;
  if (!std::filesystem::exists(source_dir() + "/tests/e2e/node_modules/@modelcontextprotocol/sdk")) {
    std::cout << "SKIP: tests/e2e/node_modules is missing; run: npm ci --prefix tests/e2e" << std::endl;
    std::exit(77);
  }
  return true;
}

TEST_CASE("mcp --fleet: the same tools over the store, as the read-only user" * doctest::skip(!mcp_case_entry())) {
  TempDir dir;
  const std::string db = "fleet_mcp";
  std::string a, b;
  make_two_hosts(dir, a, b);
  ship_ok(a, db);
  ship_ok(b, db);
  const int64_t events = ch().number("SELECT count() FROM fleet_mcp.events");
  // The server layer alone: the reader's profile refuses a write the guard never sees.
  auto reader = fleet::make_endpoint(ch().url(), db, "causeway_reader", ch().reader_pw_file());
  REQUIRE(reader.ok());
  fleet::ClickHouse as_reader_ch(*reader);
  auto write = as_reader_ch.execute("INSERT INTO fleet_mcp.events (host) VALUES ('x')");
  REQUIRE_FALSE(write.ok());
  CHECK(write.error().message.find("readonly") != std::string::npos);
  const std::string src = source_dir();
  auto r = run_process({"sh", src + "/tests/e2e/run-node.sh", src + "/tests/e2e/mcp_fleet.test.mjs"},
                       {"CAUSEWAY_BIN=" + causeway_bin(), "FLEET_URL=" + ch().url(), "FLEET_DATABASE=" + db,
                        "FLEET_READER_PW=" + ch().reader_pw_file(), "FLEET_EVENTS=" + std::to_string(events)});
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("ok - tools without a fleet reader answer needs_host_db") != std::string::npos);
  CHECK(ch().number("SELECT count() FROM fleet_mcp.events") == events);
}

TEST_CASE("bad input: the reader cannot ship, a wrong password, a closed port, a store from a newer causeway") {
  TempDir dir;
  const std::string file = dir.file("h.db");
  REQUIRE(run_causeway({"demo", "quiet", "--db", file, "-q"}).exit_code == 0);

  auto ro = run_causeway(cat({"ship", "--json", "--to", ch().url(), "--db", file}, as_reader("fleet_bad")));
  CHECK(ro.exit_code == 1);
  CHECK(ro.out.find("read-only") != std::string::npos);

  std::ofstream(dir.file("wrong.pw")) << "not-the-password\n";
  auto bad = run_causeway({"ship", "--json", "--to", ch().url(), "--db", file, "--user", "causeway_writer", "--password-file",
                           dir.file("wrong.pw")});
  CHECK(bad.exit_code == 1);
  CHECK(json::parse(bad.out)["error"]["code"] == "fleet_auth");

  const auto t0 = Clock::now();
  auto closed = ship(file, "fleet_bad", ch().closed_url());
  CHECK(closed.exit_code == 1);
  CHECK(json::parse(closed.out)["error"]["code"] == "fleet_unreachable");
  CHECK(Clock::now() - t0 < std::chrono::seconds(5));
  auto reader_closed = run_causeway(cat({"explain", "--json", "--fleet", ch().closed_url()}, as_reader("fleet_bad")));
  CHECK(reader_closed.exit_code == 1);

  // A store laid out by a newer causeway: ship and the readers refuse it, writing nothing (no
  // newer progress row; a count would change when the engine folds older ones in a merge).
  ship_ok(file, "fleet_newer");
  REQUIRE(ch().writer("fleet_newer").execute("INSERT INTO fleet_newer.schema_version VALUES (99, '9.9', 0)"));
  const int64_t before = ch().number("SELECT max(ver) FROM fleet_newer.ship_progress");
  auto newer = ship(file, "fleet_newer");
  CHECK(newer.exit_code == 1);
  CHECK(json::parse(newer.out)["error"]["code"] == "fleet_too_new");
  CHECK(ch().number("SELECT max(ver) FROM fleet_newer.ship_progress") == before);
  auto newer_read = run_causeway(cat({"explain", "--json", "--fleet", ch().url()}, as_reader("fleet_newer")));
  CHECK(newer_read.exit_code == 1);
  CHECK(json::parse(newer_read.out)["error"]["code"] == "fleet_too_new");
  // The local DB is opened read-only by ship: unchanged after all of it.
  CHECK(run_causeway({"stats", "--json", "--db", file}).exit_code == 0);
}

TEST_CASE("the server killed mid-ship: exit 1 within seconds; after a restart every row is there exactly once") {
  TempDir dir;
  const std::string big = dir.file("big.db"), db = "fleet_killed";
  REQUIRE(run_causeway({"demo", "incident", "--events", "1000000", "--db", big, "-q"}).exit_code == 0);
  const int64_t events = sqlite_count(big, "SELECT count(*) FROM events");
  const int64_t sched = sqlite_count(big, "SELECT count(*) FROM sched");
  REQUIRE(events > 500000);

  ProcessResult cut;
  Clock::time_point ended;
  std::thread shipper([&] {
    cut = ship(big, db);
    ended = Clock::now();
  });
  // Kill once the first batches are confirmed, i.e. mid-way through the events.
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto n = ch().writer(db).select("SELECT count() FROM fleet_killed.events", {fleet::ColumnKind::Int});
    started = n && !n->empty() && fleet::to_i64(n->front()[0]) > 0;
  }
  const auto killed = Clock::now();
  ch().kill_hard();
  shipper.join();
  REQUIRE(started);
  INFO(cut.err, cut.out);
  CHECK(cut.exit_code == 1);
  CHECK(json::parse(cut.out)["error"]["code"] == "fleet_unreachable");
  CHECK(ended - killed < std::chrono::seconds(5));

  REQUIRE_MESSAGE(ch().start(), ch().problem());
  const int64_t partial = ch().number("SELECT count() FROM fleet_killed.events");
  CHECK(partial < events);
  json resumed = ship_ok(big, db);
  CHECK(resumed["rows"]["events"] == events - partial);
  CHECK(ch().number("SELECT count() FROM fleet_killed.events") == events);
  CHECK(ch().number("SELECT uniqExact(src_id) FROM fleet_killed.events") == events);
  CHECK(ch().number("SELECT count() FROM fleet_killed.sched") == sched);

  // A batch the store kept but whose progress row was lost (the server answered, then the link
  // broke): half of the last 200,000 rows are there, the watermark says none are. The next ship
  // sends exactly the missing half.
  const int64_t top = ch().number("SELECT max(src_id) FROM fleet_killed.events"), back = top - 200000;
  auto w = ch().writer(db);
  REQUIRE(w.execute("ALTER TABLE fleet_killed.events DELETE WHERE src_id > " + std::to_string(back) + " AND src_id % 2 = 0"));
  // A mutation runs part by part in the background: wait until every part is done.
  for (int i = 0; i < 600 && ch().number("SELECT count() FROM system.mutations WHERE database = 'fleet_killed' AND is_done = 0") > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int64_t removed = events - ch().number("SELECT count() FROM fleet_killed.events");
  REQUIRE(removed > 0);
  REQUIRE(w.execute("INSERT INTO fleet_killed.ship_progress SELECT host, boot_id, session_start, session_id, 'events', " +
                    std::to_string(back) + ", '', max(ver) + 1 FROM fleet_killed.ship_progress WHERE tbl = 'events' "
                    "GROUP BY host, boot_id, session_start, session_id"));
  json refill = ship_ok(big, db);
  CHECK(refill["rows"]["events"] == removed);
  CHECK(ch().number("SELECT count() FROM fleet_killed.events") == events);
  CHECK(ch().number("SELECT uniqExact(src_id) FROM fleet_killed.events") == events);
}

}  // namespace causeway::test
