// `causeway requests` as a user runs it (docs/INTERFACES.md "Inference requests", "Exact
// numbers"): the real binary on demo DBs, every answer read as a script would read it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diagnosis/request_latency.h"
#include "tests/support/test_support.h"

using causeway::test::run_causeway;
using causeway::test::TempDir;
using nlohmann::json;

namespace {

std::string requests_demo_db(TempDir& dir, const std::string& scenario) {
  const std::string db = dir.file(scenario + ".db");
  auto d = run_causeway({"demo", scenario, "--db", db, "--seed", "1"});
  REQUIRE_MESSAGE(d.exit_code == 0, d.err);
  return db;
}

// The one JSON document a --json run prints on stdout.
json one_document(const causeway::test::ProcessResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.out.find('\n') == r.out.size() - 1);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("requests --json: every instant has its exact _utc twin, as in the MCP answer") {
  TempDir dir;
  const std::string db = requests_demo_db(dir, "requests-prefill");
  auto r = run_causeway({"requests", "--db", db, "--json", "--slowest", "3"});
  REQUIRE(r.exit_code == 0);
  const json doc = one_document(r)["requests"];
  const json& w = doc["window"];
  REQUIRE(w["from_ns"].is_number_integer());
  CHECK(w["from_utc"].is_string());
  CHECK(w["to_utc"].is_string());
  CHECK(w["from_utc"].get<std::string>().size() == std::string("2026-11-21T10:04:05.123456789Z").size());
  REQUIRE(doc["slowest"].size() == 3);
  for (const json& s : doc["slowest"]) {
    CHECK(s["start_utc"].is_string());
    CHECK(s["read_end_utc"].is_string());
  }
}

TEST_CASE("requests: usage errors exit 2, and under --json are one {\"error\"} document on stdout") {
  TempDir dir;
  const std::string db = requests_demo_db(dir, "requests-prefill");
  const std::vector<std::vector<std::string>> bad = {
      {"--pid", "abc"}, {"--metric", "p99"}, {"--quantile", "1.5"}, {"--quantile", "0"}, {"--since", "5x"}, {"--no-such-flag"}};
  for (const auto& flags : bad) {
    std::vector<std::string> args = {"requests", "--db", db};
    args.insert(args.end(), flags.begin(), flags.end());
    CAPTURE(flags.front());
    auto text = run_causeway(args);
    CHECK(text.exit_code == 2);
    CHECK(text.out.empty());
    CHECK_FALSE(text.err.empty());
    args.push_back("--json");
    auto j = run_causeway(args);
    CHECK(j.exit_code == 2);
    const json doc = one_document(j);
    CHECK(doc["error"]["code"] == "usage");
    CHECK_FALSE(doc["error"]["message"].get<std::string>().empty());
  }
  auto unknown = run_causeway({"frobnicate", "--json"});
  CHECK(unknown.exit_code == 2);
  CHECK(one_document(unknown)["error"]["code"] == "usage");
}

TEST_CASE("requests: filters that match none say so; a session that served nothing says to trace a server") {
  TempDir dir;
  const std::string db = requests_demo_db(dir, "requests-prefill");
  auto none = run_causeway({"requests", "--db", db, "--tenant", "no-such-tenant"});
  REQUIRE(none.exit_code == 0);
  CHECK(none.out.find("none of the session's") != std::string::npos);
  CHECK(none.out.find("no HTTP requests were seen") == std::string::npos);
  const json doc = one_document(run_causeway({"requests", "--db", db, "--tenant", "no-such-tenant", "--json"}))["requests"];
  CHECK(doc["count"] == 0);
  const json all = one_document(run_causeway({"requests", "--db", db, "--json"}))["requests"];
  CHECK(all["count"].get<int64_t>() > 0);
  CHECK(doc["session_requests"] == all["count"]);

  const std::string calls_only = requests_demo_db(dir, "incident");
  auto nothing = run_causeway({"requests", "--db", calls_only});
  REQUIRE(nothing.exit_code == 0);
  CHECK(nothing.out.find("no HTTP requests were seen") != std::string::npos);
  CHECK(one_document(run_causeway({"requests", "--db", calls_only, "--json"}))["requests"]["session_requests"] == 0);
}

TEST_CASE("requests text: a time not measured reads '-', never '- ms'") {
  TempDir dir;
  const std::string db = requests_demo_db(dir, "requests-prefill");
  json doc = one_document(run_causeway({"requests", "--db", db, "--json", "--slowest", "1"}));
  REQUIRE(doc["requests"]["slowest"].size() == 1);
  doc["requests"]["slowest"][0]["itl_max_ms"] = nullptr;  // a response that was not streamed
  const std::string text = causeway::requests::request_latency_text(doc);
  CAPTURE(text);
  CHECK(text.find("ITL max -,") != std::string::npos);
  CHECK(text.find("- ms") == std::string::npos);
  CHECK(text.find(" ms, ITL max -, E2E ") != std::string::npos);
}
