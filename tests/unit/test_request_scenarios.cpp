// The request demo scenarios (docs/INFERENCE.md "Demo scenarios"): each names its planted
// request cause first in the tail of `causeway requests` (the metric where it shows), with
// its culprit; the quiet server has no request cause of note.
#include <doctest/doctest.h>

#include "requests/latency.h"
#include "requests/request_chains.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"

using namespace causeway;
using json = nlohmann::json;

namespace {

std::string demo(const std::string& scenario, uint64_t seed, test::TempDir& dir) {
  const std::string path = dir.file(scenario + std::to_string(seed) + ".db");
  DemoOptions o;
  o.scenario = scenario;
  o.seed = seed;
  o.start_ns = 1'790'000'000'000'000'000;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  return path;
}

json ask(const std::string& scenario, uint64_t seed, requests::Metric m, test::TempDir& dir) {
  auto db = open_read_only(demo(scenario, seed, dir));
  REQUIRE(db.ok());
  requests::RequestQuery q;
  q.metric = m;
  auto r = requests::request_latency_json(db->get(), q);
  REQUIRE(r);
  return (*r)["requests"];
}

}  // namespace

TEST_CASE("request scenarios: the planted cause leads the tail, with its culprit") {
  test::TempDir dir;
  size_t seen = 0;
  for (const ScenarioInfo& info : demo_scenarios()) {
    if (info.name.rfind("requests-", 0) != 0) continue;
    ++seen;
    for (uint64_t seed : {1, 7}) {
      const std::string& want = info.expected_request_cause;
      const auto metric = want == "queueing" ? requests::Metric::ttft : requests::Metric::itl;
      json d = ask(info.name, seed, metric, dir);
      CAPTURE(info.name);
      CAPTURE(seed);
      CAPTURE(d["tail"].dump());
      CHECK(d["count"].get<int>() >= 100);
      const json& causes = d["tail"]["causes"];
      if (want.empty()) {
        for (const auto& c : causes) CHECK(c["share_time"].get<double>() < 0.2);
        continue;
      }
      REQUIRE(!causes.empty());
      CHECK(causes[0]["cause"] == want);
      CHECK(causes[0]["share_time"].get<double>() >= 0.5);
      const json& k = causes[0]["culprit"];
      if (want == "cpu_contention") {
        CHECK(k["pid"] == info.expected_culprit_pid);
        CHECK(k["comm"] == info.expected_culprit);
      }
      if (want == "prefill_interference") CHECK(!k["requests"].empty());
      if (want == "queueing") CHECK(k["waiting_max"].get<double>() >= 5);
      if (want == "kv_cache_pressure") CHECK(k["preemptions"].get<double>() >= 1);
    }
  }
  CHECK(seen == 5);
}

TEST_CASE("request chains: severity from how slow the tail is and how much the cause explains") {
  using requests::request_chain_severity;
  CHECK(std::string(request_chain_severity(1000, 30, 0.9)) == "HIGH");
  CHECK(std::string(request_chain_severity(1000, 30, 0.4)) == "MEDIUM");
  CHECK(std::string(request_chain_severity(1000, 30, 0.1)) == "LOW");
  CHECK(std::string(request_chain_severity(45, 30, 0.9)) == "MEDIUM");  // 1.5x, 15 ms above
  CHECK(std::string(request_chain_severity(33, 20, 0.9)) == "MEDIUM");  // 1.65x but 13 ms: not HIGH
  CHECK(std::string(request_chain_severity(24, 20, 0.9)) == "LOW");     // a quiet server's jitter
  CHECK(std::string(request_chain_severity(3, 1, 1.0)) == "LOW");       // 3x of nothing
}

TEST_CASE("request chains: each request scenario's cause is a HIGH request chain naming the requests; quiet has none") {
  test::TempDir dir;
  for (const ScenarioInfo& info : demo_scenarios()) {
    if (info.name.rfind("requests-", 0) != 0) continue;
    CAPTURE(info.name);
    const std::string path = demo(info.name, 3, dir);
    auto db = open_read_only(path);
    REQUIRE(db.ok());
    auto r = requests::request_chains(db->get(), {});
    REQUIRE(r);
    const json& chains = (*r)["chains"];
    CAPTURE(chains.dump());
    if (info.expected_request_cause.empty()) {
      for (const auto& c : chains) CHECK(c["severity"] != "HIGH");
      continue;
    }
    REQUIRE(!chains.empty());
    CHECK(chains[0]["level"] == "request");
    CHECK(chains[0]["severity"] == "HIGH");
    CHECK(chains[0]["cause"] == info.expected_request_cause);
    CHECK(!chains[0]["requests"].empty());
    CHECK(!chains[0]["culprit"]["comm"].get<std::string>().empty());
    CHECK(!chains[0]["recommendation"].get<std::string>().empty());
  }
}

TEST_CASE("explain: request-level chains first when the session served requests") {
  test::TempDir dir;
  auto r = test::run_causeway({"explain", "--db", demo("requests-queueing", 1, dir), "--json"});
  REQUIRE(r.exit_code == 0);
  json d = json::parse(r.out);
  REQUIRE(!d["chains"].empty());
  CHECK(d["chains"][0]["level"] == "request");
  CHECK(d["chains"][0]["cause"] == "queueing");
  auto text = test::run_causeway({"explain", "--db", demo("requests-queueing", 2, dir)});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("1. [HIGH] queueing: TTFT") != std::string::npos);
  CHECK(text.out.find("Requests:   burst-") != std::string::npos);
  // A training session has no request chains: explain reads as before.
  auto train = test::run_causeway({"explain", "--db", demo("incident", 1, dir), "--json"});
  REQUIRE(train.exit_code == 0);
  for (const auto& c : json::parse(train.out)["chains"]) CHECK(!c.contains("level"));
}
