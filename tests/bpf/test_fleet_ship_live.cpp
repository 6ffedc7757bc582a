// `causeway trace --ship URL` (docs/FLEET.md "Shipping while tracing") with a real, private
// clickhouse-server:
//   live: a cw_workload traced with --ship and rounds every 300 ms; rounds run while it traces
//     (progress rows appear before the stop), and after the stop the store holds exactly the
//     DB's events, every one once.
//   dead store: --ship to a port nobody listens on: the trace records every call and exits 0
//     with a warning naming `causeway ship`; that ship then brings the store level.
#include <doctest/doctest.h>

#include <iostream>
#include <memory>

#include "tests/bpf/collector_harness.h"
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
    auto n = ch.writer("live_ship").select("SELECT count() FROM live_ship.events");
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

TEST_CASE("trace --ship to a dead store: tracing goes on and exits 0; causeway ship catches up") {
  ClickHouseServer& ch = server();
  TempDir dir;
  Child w(workload(dir, 500));
  std::vector<std::string> args{"--lib", testprog("libcudart.so.13"), "--no-stack", "--pid", std::to_string(w.pid())};
  for (const auto& f : ship_flags(ch.closed_url(), "dead_ship")) args.push_back(f);
  Tracer t(dir, args);
  touch(dir.file("go"));
  REQUIRE(w.wait() == 0);
  REQUIRE(t.stop(2) == 0);
  INFO(t.log());
  CHECK(t.log().find("warning: shipping to " + ch.closed_url() + " failed") != std::string::npos);
  CHECK(t.log().find("causeway ship --to") != std::string::npos);
  CHECK(q_int(t.db(), "SELECT count(*) FROM events WHERE op_id = 116") == 500);
  auto r = run_causeway({"ship", "--json", "--to", ch.url(), "--db", t.db(), "--database", "dead_ship", "--user", "causeway_writer",
                         "--password-file", ch.writer_pw_file()});
  REQUIRE(r.exit_code == 0);
  CHECK(ch.number("SELECT count() FROM dead_ship.events") == q_int(t.db(), "SELECT count(*) FROM events"));
}

}  // namespace causeway::test
