// `causeway demo --events N` writes about N call events, whatever the scenario's mix of
// phases (warm-up, bursts, periodic stalls).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using namespace causeway::test;

TEST_CASE("demo --events N writes N call events within 5%") {
  // incident: the default; network: a 20 s loss cycle; cold-start: a slow warm-up;
  // memcpy-bottleneck: few, long calls.
  for (const std::string scenario : {"incident", "network", "cold-start", "memcpy-bottleneck"}) {
    CAPTURE(scenario);
    TempDir dir;
    DemoOptions o;
    o.scenario = scenario;
    o.events = 120000;
    auto r = run_demo(dir.file("trace.db"), o);
    REQUIRE(r.ok());
    CHECK(std::fabs(static_cast<double>(r->events_written) - 120000.0) / 120000.0 < 0.05);
    // The DB holds the session, and the sizing runs left nothing behind.
    auto db = open_read_only(dir.file("trace.db"));
    REQUIRE(db.ok());
    auto calls = query_int(db->get(), "SELECT COUNT(*) FROM v_calls");
    REQUIRE(calls.ok());
    CHECK(calls.value().value_or(0) > 0);
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
      CHECK(e.path().filename().string().find("sizing") == std::string::npos);
  }
}
