// examples/prometheus/ for the request families (docs/METRICS.md "Requests"): the recording
// and alert rules pass `promtool check rules` and their unit tests (`promtool test rules`),
// and the Grafana dashboard is valid JSON whose every query Prometheus' own parser accepts
// and names only series causeway serves. Needs Debian's promtool (package prometheus): 77
// with the reason when it is missing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "metrics/exposition.h"
#include "metrics/registry.h"
#include "tests/support/test_support.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace {

const char* kPromtool = "/usr/bin/promtool";

void need_promtool() {
  if (!file_exists(kPromtool)) {
    std::printf("SKIPPED: promtool is not installed (apt-get install prometheus)\n");
    std::exit(77);
  }
}

std::string example(const std::string& name) { return source_dir() + "/examples/prometheus/" + name; }

// Grafana's variables made concrete, as Grafana does before it sends a query.
std::string as_promql(std::string expr) {
  for (auto [var, value] : {std::pair{"$__rate_interval", "5m"}, std::pair{"$instance", ".*"}}) {
    for (size_t at; (at = expr.find(var)) != std::string::npos;) expr.replace(at, std::string(var).size(), value);
  }
  return expr;
}

// The queries as recording rules, which `promtool check rules` parses with Prometheus' parser.
ProcessResult check_as_rules(const TempDir& dir, const std::vector<std::string>& exprs) {
  json rules = json::array();
  for (size_t i = 0; i < exprs.size(); ++i) rules.push_back({{"record", "dashboard:query" + std::to_string(i)}, {"expr", exprs[i]}});
  const std::string path = dir.file("dashboard.rules.yml");
  std::ofstream(path) << json{{"groups", json::array({{{"name", "dashboard"}, {"rules", rules}}})}}.dump(2);  // JSON is YAML
  return run_process({kPromtool, "check", "rules", path});
}

}  // namespace

TEST_CASE("genai.rules.yml: promtool checks the rules and passes their unit tests") {
  need_promtool();
  auto check = run_process({kPromtool, "check", "rules", example("genai.rules.yml")});
  CHECK_MESSAGE(check.exit_code == 0, check.out << check.err);
  CHECK(check.out.find("SUCCESS: 10 rules found") != std::string::npos);
  // promtool resolves rule_files relative to the test file.
  auto test = run_process({kPromtool, "test", "rules", example("genai.rules.test.yml")});
  CHECK_MESSAGE(test.exit_code == 0, test.out << test.err);
  // The scrape config loads both rule files.
  auto config = run_process({kPromtool, "check", "config", example("prometheus.yml")});
  CHECK_MESSAGE(config.exit_code == 0, config.out << config.err);
  CHECK(config.out.find("genai.rules.yml") != std::string::npos);
}

TEST_CASE("genai-dashboard.json: valid JSON, p99 TTFT over its causes stacked, every query parses and names our series") {
  need_promtool();
  const json d = json::parse(read_file(example("genai-dashboard.json")));  // throws: not JSON
  REQUIRE(d["panels"].is_array());
  std::vector<std::string> exprs;
  for (const auto& p : d["panels"])
    for (const auto& t : p["targets"]) exprs.push_back(as_promql(t["expr"].get<std::string>()));
  REQUIRE(exprs.size() >= 6);
  // The first panel is p99 TTFT; under it the TTFT tail's lost time, stacked by cause.
  CHECK(d["panels"][0]["targets"][0]["expr"].get<std::string>().find("histogram_quantile(0.99") != std::string::npos);
  CHECK(d["panels"][0]["targets"][0]["expr"].get<std::string>().find("gen_ai_server_time_to_first_token_seconds_bucket") !=
        std::string::npos);
  CHECK(d["panels"][1]["gridPos"]["y"].get<int>() > d["panels"][0]["gridPos"]["y"].get<int>());
  CHECK(d["panels"][1]["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal");
  CHECK(d["panels"][1]["targets"][0]["expr"].get<std::string>().find("causeway_request_time_lost_seconds_total") !=
        std::string::npos);
  CHECK(d["panels"][1]["targets"][0]["legendFormat"] == "{{cause}}");

  TempDir dir;
  auto r = check_as_rules(dir, exprs);
  CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
  // ...and the parser does reject a broken query, so the check above can fail.
  CHECK(check_as_rules(dir, {"sum by (cause (rate(x[5m]))"}).exit_code != 0);

  // Every series a query reads is one /metrics serves (a typo would chart nothing).
  MetricsRegistry reg;
  RequestFacts f;
  f.server_pid = 1;
  f.status = 200;
  f.end_reason = "complete";
  f.ttft_ns = f.e2e_ns = 1'000'000;
  f.output_tokens = 2;
  reg.requests().observe(f);
  f.status = 503;  // the error counter has series only once a request failed
  reg.requests().observe(f);
  reg.requests().set_time_lost("ttft", "cpu_contention", 1);
  reg.set_host("h", "b");
  const std::string served = render_prometheus(reg.snapshot());
  const std::regex series_name(R"(\b(gen_ai_[a-z_]+|causeway_[a-z_]+)\b)");
  std::set<std::string> names;
  for (const auto& e : exprs)
    for (std::sregex_iterator it(e.begin(), e.end(), series_name), end; it != end; ++it) names.insert((*it)[1]);
  for (const auto& n : names) {
    CAPTURE(n);
    CHECK(served.find("\n" + n + "{") != std::string::npos);
  }
}
