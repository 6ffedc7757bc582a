// `causeway trace --ship URL` (docs/FLEET.md "Shipping while tracing") with a real, private
// clickhouse-server:
//   live: a cw_workload traced with --ship and rounds every 300 ms; rounds run while it traces
//     (progress rows appear before the stop), and after the stop the store holds exactly the
//     DB's events, every one once.
//   dead store: --ship to a port nobody listens on: the trace records every call and exits 0
//     with a warning naming `causeway ship`; that ship then brings the store level.
//   two hosts attached at different points of an NCCL job (tests/bpf/nccl_job.h, ranks from
//     the launcher's environment), each tracer in its own UTS namespace shipping every 300 ms:
//     every rank keeps one communicator, rank and sequence shift over all rounds, the later
//     host's ranks join the earlier host's numbering, and explain --fleet names rank 2 and its
//     host.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "tests/bpf/collector_harness.h"
#include "tests/bpf/nccl_job.h"
#include "tests/e2e/clickhouse_fixture.h"

namespace causeway::test {
namespace {

// The server for both cases, started on first use; missing (no package, none installable):
// the test is skipped with the reason, as a whole (exit 77).
ClickHouseServer& server() {
  static std::unique_ptr<ClickHouseServer> s = std::make_unique<ClickHouseServer>();
  if (s->skipped()) {
    std::cerr << "SKIP: clickhouse-server unavailable: " << s->problem() << "\n";
    std::exit(77);
  }
  REQUIRE_MESSAGE(s->problem().empty(), s->problem());
  return *s;
}

std::vector<std::string> ship_flags(const std::string& url, const std::string& database) {
  return {"--ship", url, "--database", database, "--user", "causeway_writer", "--password-file", server().writer_pw_file(),
          "--ship-interval", "300ms"};
}

// A workload of `iters` stream syncs at 2 ms each, paused until go.
pid_t workload(const TempDir& dir, int iters) {
  const pid_t pid = spawn({testprog("cw_workload"), "--threads", "1", "--iterations", std::to_string(iters), "--latency-us", "2000",
                           "--ops", "stream_sync", "--ready-file", dir.file("w.up"), "--wait-file", dir.file("go")},
                          dir.file("w.log"));
  wait_for_file(dir.file("w.up"));
  return pid;
}

}  // namespace

TEST_CASE("trace --ship: rounds while tracing, the last at the stop; the store equals the DB") {
  ClickHouseServer& ch = server();
  TempDir dir;
  Child w(workload(dir, 1500));  // ~3 s of calls
  std::vector<std::string> args{"--lib", testprog("libcudart.so.13"), "--no-stack", "--pid", std::to_string(w.pid())};
  for (const auto& f : ship_flags(ch.url(), "live_ship")) args.push_back(f);
  Tracer t(dir, args);
  touch(dir.file("go"));
  // Rounds while the workload still runs: events in the store before the stop.
  int64_t during = 0;
  for (int i = 0; i < 100 && during == 0; ++i) {
    sleep_ms(100);
    auto n = ch.writer("live_ship").select("SELECT count() FROM live_ship.events", {fleet::ColumnKind::Int});
    if (n && !n->empty()) during = std::atoll(n->front()[0].c_str());
  }
  CHECK(during > 0);
  REQUIRE(w.wait() == 0);
  REQUIRE(t.stop(2) == 0);
  INFO(t.log());
  CHECK(t.log().find("causeway trace: shipped to " + ch.url()) != std::string::npos);
  const int64_t events = q_int(t.db(), "SELECT count(*) FROM events");
  CHECK(q_int(t.db(), "SELECT count(*) FROM events WHERE op_id = 116") == 1500);
  CHECK(ch.number("SELECT count() FROM live_ship.events") == events);
  CHECK(ch.number("SELECT uniqExact(src_id) FROM live_ship.events") == events);
  CHECK(ch.number("SELECT count() FROM live_ship.events WHERE op_id = 116") == 1500);
  CHECK(ch.number("SELECT count() FROM live_ship.sessions FINAL") == 1);
}

TEST_CASE("trace --ship to a dead store: tracing goes on, exits 1 with its DB complete; causeway ship catches up") {
  ClickHouseServer& ch = server();
  TempDir dir;
  Child w(workload(dir, 500));
  std::vector<std::string> args{"--lib", testprog("libcudart.so.13"), "--no-stack", "--pid", std::to_string(w.pid())};
  for (const auto& f : ship_flags(ch.closed_url(), "dead_ship")) args.push_back(f);
  Tracer t(dir, args);
  touch(dir.file("go"));
  REQUIRE(w.wait() == 0);
  REQUIRE(t.stop(2) == 1);  // the store never took the session: an error, the DB is complete
  INFO(t.log());
  CHECK(t.log().find("error: shipping to " + ch.closed_url() + " failed") != std::string::npos);
  CHECK(t.log().find("causeway ship --to") != std::string::npos);
  CHECK(q_int(t.db(), "SELECT count(*) FROM events WHERE op_id = 116") == 500);
  auto r = run_causeway({"ship", "--json", "--to", ch.url(), "--db", t.db(), "--database", "dead_ship", "--user", "causeway_writer",
                         "--password-file", ch.writer_pw_file()});
  REQUIRE(r.exit_code == 0);
  CHECK(ch.number("SELECT count() FROM dead_ship.events") == q_int(t.db(), "SELECT count(*) FROM events"));
}

TEST_CASE("trace --ship of two hosts attached at different points of an NCCL job: one numbering across rounds and hosts") {
  if (::system("/usr/bin/unshare --uts true >/dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED: unshare --uts is not available");
    return;
  }
  ClickHouseServer& ch = server();
  TempDir dir;
  // ~7 s of all-reduces, running at once; node-a's tracer (ranks 0, 1) attaches first,
  // node-b's (ranks 2, 3) ~2 s later, so their sequences count from different collectives.
  Job job(dir, /*paused=*/false, /*iterations=*/2000);
  auto tracer = [&](const std::string& name, std::vector<pid_t> pids) {
    std::vector<std::string> args{"--lib", testprog("libnccl.so.2"), "--no-stack"};
    for (pid_t p : pids) args.insert(args.end(), {"--pid", std::to_string(p)});
    for (const auto& f : ship_flags(ch.url(), "live_nccl")) args.push_back(f);
    return std::make_unique<Tracer>(dir, args, name, "cw-" + name);
  };
  auto a = tracer("node-a", {job.pids[0], job.pids[1]});
  sleep_ms(2000);
  auto b = tracer("node-b", {job.pids[2], job.pids[3]});
  int64_t during = 0;  // both hosts' collectives in the store while the job still runs
  for (int i = 0; i < 100 && during < 2; ++i) {
    sleep_ms(100);
    auto n = ch.writer("live_nccl").select("SELECT uniqExact(host) FROM live_nccl.collectives", {fleet::ColumnKind::Int});
    if (n && !n->empty()) during = std::atoll(n->front()[0].c_str());
  }
  CHECK(during == 2);
  job.run();
  sleep_ms(300);
  REQUIRE(a->stop() == 0);
  REQUIRE(b->stop() == 0);
  INFO(a->log(), b->log());
  const std::string coll = "SELECT count(*) FROM events WHERE op_id IN (SELECT id FROM ops WHERE family = 'collective')";
  const int64_t a_entries = q_int(a->db(), coll), b_entries = q_int(b->db(), coll);
  CHECK(ch.number("SELECT count() FROM live_nccl.collectives") == a_entries + b_entries);
  // Every rank: one communicator, its launcher rank, one shift of its traced sequence — the same
  // in every round that shipped its calls.
  for (int r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    const std::string of = " FROM live_nccl.collectives WHERE pid = " + std::to_string(job.pids[r]);
    CHECK(ch.number("SELECT uniqExact(comm)" + of) == 1);
    CHECK(ch.number("SELECT uniqExact(seq - traced_seq)" + of) == 1);
    CHECK(ch.number("SELECT min(rank)" + of) == r);
    CHECK(ch.number("SELECT max(rank)" + of) == r);
    CHECK(ch.number("SELECT countIf(rank_source != 'RANK')" + of) == 0);
  }
  CHECK(ch.number("SELECT uniqExact(comm) FROM live_nccl.collectives") == 1);
  // node-b attached hundreds of collectives later: its shift is that much larger, and each of
  // its all-reduces is one group with node-a's.
  CHECK(ch.number("SELECT any(seq - traced_seq) FROM live_nccl.collectives WHERE host = 'cw-node-b'") -
            ch.number("SELECT any(seq - traced_seq) FROM live_nccl.collectives WHERE host = 'cw-node-a'") > 50);
  CHECK(ch.number("SELECT count() FROM (SELECT seq FROM live_nccl.collectives GROUP BY comm, seq, op_id "
                  "HAVING uniqExact(host) = 2 AND count() = 4)") * 2 >= b_entries * 9 / 10);
  auto r = run_causeway({"explain", "--json", "--fleet", ch.url(), "--database", "live_nccl", "--user", "causeway_reader",
                         "--password-file", ch.reader_pw_file()});
  REQUIRE(r.exit_code == 0);
  // The store's cross-host chain (each host's own chains are shipped too).
  const nlohmann::json explained = nlohmann::json::parse(r.out);
  nlohmann::json straggler;
  for (const auto& c : explained["chains"])
    if (c.value("id", "").rfind("fleet-nccl_straggler-", 0) == 0) straggler = c;
  REQUIRE_MESSAGE(!straggler.is_null(), r.out);
  CHECK(straggler["culprit"]["host"] == "cw-node-b");
  CHECK(straggler["culprit"]["rank"] == kLateRank);
  CHECK(straggler["culprit"]["pid"] == job.pids[kLateRank]);
}

}  // namespace causeway::test
