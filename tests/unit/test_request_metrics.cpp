// The request families of /metrics (metrics/request_families.h, docs/METRICS.md "Requests"):
// the GenAI server histograms with the conventions' buckets, the outcome counters, the
// monotone time lost per cause, the label caps under 10,000 distinct paths, and the trace's
// adapter (collector/request_metrics_feed.h) against `causeway requests`' own numbers on a
// demo session.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>

#include "collector/request_metrics_feed.h"
#include "metrics/exposition.h"
#include "metrics/genai_semconv.h"
#include "metrics/registry.h"
#include "diagnosis/request_latency.h"
#include "requests/to_record.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tests/unit/request_rows.h"
#include "tracedb/open.h"

using namespace causeway;

namespace {

// The value of the one sample whose line starts with `series` (name{labels}), or -1.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  double found = -1;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) {
      REQUIRE(found == -1);  // one sample per series
      found = std::stod(line.substr(series.size() + 1));
    }
  return found;
}

size_t lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0;
  return n;
}

RequestFacts ok_stream(const std::string& path, int64_t ttft_ms, uint64_t tokens, int64_t gap_ms) {
  RequestFacts f;
  f.server_pid = 4242;
  f.comm = "api_server";
  f.path = path;
  f.tenant = "acme";
  f.status = 200;
  f.end_reason = "complete";
  f.ttft_ns = ttft_ms * 1'000'000;
  f.decode_ns = static_cast<int64_t>(tokens - 1) * gap_ms * 1'000'000;
  f.e2e_ns = *f.ttft_ns + f.decode_ns + 2'000'000;
  f.output_tokens = tokens;
  return f;
}

const std::string kLabels =
    R"(server="4242",comm="api_server",gen_ai_operation_name="chat",path="/v1/chat/completions",tenant="acme")";

}  // namespace

TEST_CASE("the conventions' advised buckets, Prometheus names, operation names and outcomes") {
  CHECK(genai::kTtftBuckets.front() == 0.001);
  CHECK(genai::kTtftBuckets.back() == 10.0);
  CHECK(genai::kTpotBuckets.size() == 13);
  CHECK(genai::kDurationBuckets.back() == 81.92);
  CHECK(std::string(genai::kTtftName) == "gen_ai_server_time_to_first_token_seconds");
  CHECK(genai::bucket_index(genai::kTtftBuckets, 100'000'000) == 7);  // exactly 0.1 s: le="0.1"
  CHECK(genai::bucket_index(genai::kTtftBuckets, 100'000'001) == 8);
  CHECK(genai::bucket_index(genai::kTtftBuckets, 11'000'000'000) == genai::kTtftBuckets.size());  // +Inf
  CHECK(std::string(genai::operation_of("/v1/chat/completions")) == "chat");
  CHECK(std::string(genai::operation_of("/v1/completions")) == "text_completion");
  CHECK(std::string(genai::operation_of("/v1/embeddings")) == "embeddings");
  CHECK(std::string(genai::operation_of("/admin")) == "unknown");
  CHECK(genai::outcome_of(200, "complete") == genai::Outcome::ok);
  CHECK(genai::outcome_of(503, "complete") == genai::Outcome::error);
  CHECK(genai::outcome_of(503, "aborted") == genai::Outcome::error);
  CHECK(genai::outcome_of(200, "disconnected") == genai::Outcome::disconnected);
  CHECK(genai::outcome_of(0, "aborted") == genai::Outcome::aborted);
  CHECK(genai::outcome_of(200, "trace_end") == genai::Outcome::incomplete);
  CHECK(genai::outcome_of(200, "lost") == genai::Outcome::incomplete);
  // TPOT: decode time over the tokens after the first; one token has no TPOT.
  auto o = genai::observe_request(200, "complete", 50'000'000, 200'000'000, 90'000'000, 10);
  CHECK(*o.tpot_ns == 10'000'000);
  CHECK_FALSE(genai::observe_request(200, "complete", 1, 2, 0, 1).tpot_ns);
  // Tokens: the counted number when there is one, else a stream's events, else none.
  CHECK(*genai::output_tokens_of(std::nullopt, true, 12) == 12);
  CHECK(*genai::output_tokens_of(40, true, 12) == 40);
  CHECK_FALSE(genai::output_tokens_of(std::nullopt, false, 0));
}

TEST_CASE("GenAI histograms and request counters: exact buckets, sums and outcomes in the exposition") {
  MetricsRegistry reg;
  reg.requests().observe(ok_stream("/v1/chat/completions", 100, 11, 20));  // TTFT on le=0.1, TPOT 20 ms
  reg.requests().observe(ok_stream("/v1/chat/completions", 30, 3, 60));    // TTFT in (0.02, 0.04], TPOT in (0.05, 0.075]
  RequestFacts err = ok_stream("/v1/chat/completions", 5, 1, 0);
  err.status = 500;
  reg.requests().observe(err);
  RequestFacts gone = ok_stream("/v1/chat/completions", 40, 4, 10);
  gone.end_reason = "disconnected";  // the client went away mid-stream
  reg.requests().observe(gone);
  RequestFacts aborted;
  aborted.server_pid = 4242;
  aborted.comm = "api_server";
  aborted.path = "/v1/chat/completions";
  aborted.tenant = "acme";
  aborted.end_reason = "aborted";
  reg.requests().observe(aborted);  // the server closed first: no response head at all, no E2E

  const std::string text = render_prometheus(reg.snapshot());
  CAPTURE(text);
  const std::string ttft = "gen_ai_server_time_to_first_token_seconds";
  // Successful responses only: 2 of the 5.
  CHECK(sample(text, ttft + "_count{" + kLabels + "}") == 2);
  CHECK(sample(text, ttft + "_bucket{" + kLabels + ",le=\"0.02\"}") == 0);
  CHECK(sample(text, ttft + "_bucket{" + kLabels + ",le=\"0.04\"}") == 1);
  CHECK(sample(text, ttft + "_bucket{" + kLabels + ",le=\"0.08\"}") == 1);
  CHECK(sample(text, ttft + "_bucket{" + kLabels + ",le=\"0.1\"}") == 2);  // le is inclusive
  CHECK(sample(text, ttft + "_bucket{" + kLabels + ",le=\"+Inf\"}") == 2);
  CHECK(sample(text, ttft + "_sum{" + kLabels + "}") == doctest::Approx(0.13));
  const std::string tpot = "gen_ai_server_time_per_output_token_seconds";
  CHECK(sample(text, tpot + "_count{" + kLabels + "}") == 2);
  CHECK(sample(text, tpot + "_bucket{" + kLabels + ",le=\"0.025\"}") == 1);
  CHECK(sample(text, tpot + "_bucket{" + kLabels + ",le=\"0.075\"}") == 2);
  CHECK(sample(text, tpot + "_sum{" + kLabels + "}") == doctest::Approx(0.08));
  const std::string dur = "gen_ai_server_request_duration_seconds";
  CHECK(sample(text, dur + "_count{" + kLabels + "}") == 2);
  CHECK(sample(text, dur + "_count{" + kLabels + ",error_type=\"500\"}") == 1);
  CHECK(sample(text, dur + "_count{" + kLabels + ",error_type=\"disconnected\"}") == 1);
  CHECK(sample(text, dur + "_bucket{" + kLabels + ",le=\"81.92\"}") == 2);
  CHECK(sample(text, "causeway_requests_total{" + kLabels + "}") == 5);
  CHECK(sample(text, "causeway_request_errors_total{" + kLabels + ",error_type=\"500\"}") == 1);
  CHECK(sample(text, "causeway_request_disconnects_total{" + kLabels + "}") == 1);
  CHECK(sample(text, "causeway_request_aborts_total{" + kLabels + "}") == 1);
  CHECK(lines_starting(text, "# TYPE " + ttft + " histogram") == 1);
  CHECK(lines_starting(text, "# TYPE causeway_request_time_lost_seconds_total counter") == 1);
}

TEST_CASE("time lost per cause is a counter: a pass that claims less never takes it back") {
  MetricsRegistry reg;
  reg.requests().set_time_lost("ttft", "cpu_contention", 2.5);
  reg.requests().set_time_lost("ttft", "unexplained", 0.5);
  reg.requests().set_time_lost("ttft", "cpu_contention", 1.0);  // a later pass: the median moved
  reg.requests().set_time_lost("itl", "cpu_contention", 0.25);
  const std::string text = render_prometheus(reg.snapshot());
  CHECK(sample(text, R"(causeway_request_time_lost_seconds_total{metric="ttft",cause="cpu_contention"})") == 2.5);
  CHECK(sample(text, R"(causeway_request_time_lost_seconds_total{metric="ttft",cause="unexplained"})") == 0.5);
  CHECK(sample(text, R"(causeway_request_time_lost_seconds_total{metric="itl",cause="cpu_contention"})") == 0.25);
  reg.requests().set_time_lost("ttft", "cpu_contention", 3.0);
  CHECK(sample(render_prometheus(reg.snapshot()),
               R"(causeway_request_time_lost_seconds_total{metric="ttft",cause="cpu_contention"})") == 3.0);
}

TEST_CASE("cardinality: 10,000 distinct paths and tenants stay under the caps, the rest is 'other' and counted") {
  MetricsRegistry reg;
  for (int i = 0; i < 10'000; ++i) {
    RequestFacts f = ok_stream("/v1/x/" + std::to_string(i), 10, 2, 10);
    f.tenant = "tenant-" + std::to_string(i % 500);
    reg.requests().observe(f);
  }
  const RequestFamiliesSnapshot s = reg.snapshot().requests;
  std::set<std::string> paths, tenants;
  uint64_t requests = 0;
  for (const auto& [l, v] : s.series) {
    paths.insert(l.path);
    tenants.insert(l.tenant);
    requests += v.requests;
  }
  CHECK(paths.size() <= RequestFamilies::kMaxPaths + 1);
  CHECK(paths.count("other") == 1);
  CHECK(tenants.size() <= RequestFamilies::kMaxTenants + 1);
  CHECK(s.series.size() <= RequestFamilies::kMaxLabelSets + 1);
  CHECK(requests == 10'000);  // folded, never dropped
  CHECK(s.label_overflow.at("path") == 10'000 - RequestFamilies::kMaxPaths);
  const std::string text = render_prometheus(reg.snapshot());
  CHECK(lines_starting(text, "causeway_requests_total{") == s.series.size());
  CHECK(sample(text, R"(causeway_request_label_overflow_total{label="path"})") == 10'000 - RequestFamilies::kMaxPaths);
}

TEST_CASE("traced label values are sanitized and escaped; a traced 'other' is folded, not admitted") {
  MetricsRegistry reg;
  RequestFacts f = ok_stream(std::string("/v1/a\"b\\c\nd\x01\xff") + std::string(300, 'x'), 10, 2, 10);
  f.tenant = "other";
  f.comm = "evil\x1b[31m";
  reg.requests().observe(f);
  const RequestFamiliesSnapshot s = reg.snapshot().requests;
  REQUIRE(s.series.size() == 1);
  const RequestLabels& l = s.series.begin()->first;
  CHECK(l.path.size() <= LabelCap::kMaxLabelBytes + 3);  // plus the "…" that marks a cut
  CHECK(l.path.find('\n') == std::string::npos);
  CHECK(l.path.find('\x01') == std::string::npos);
  CHECK(l.comm.find('\x1b') == std::string::npos);
  CHECK(l.tenant == "other");
  CHECK(s.label_overflow.at("tenant") == 1);
  const std::string text = render_prometheus(reg.snapshot());
  // Every sample line is one line with balanced quoting: the quote and backslash are escaped.
  CHECK(text.find(R"(path="/v1/a\"b\\c)") != std::string::npos);
}

TEST_CASE("the trace's adapter: a stored request's facts, tokens from its SSE events") {
  requests::Request q = requests::streamed("a", 0, 50, 5, 20);
  const RequestRecord rec = requests::to_record(q);
  const RequestFacts f = collector::request_facts(rec, "api");
  CHECK(f.server_pid == 100);
  CHECK(*f.ttft_ns == 50'000'000);
  CHECK(f.decode_ns == 80'000'000);  // 4 gaps of 20 ms
  CHECK(*f.output_tokens == 5);
  CHECK_FALSE(f.model);
  CHECK(genai::observe_request(f.status, f.end_reason, f.ttft_ns, f.e2e_ns, f.decode_ns, f.output_tokens).tpot_ns ==
        20'000'000);
}

TEST_CASE("the adapter's time lost per cause equals `causeway requests`' tail and its semconv object") {
  test::TempDir dir;
  const std::string path = dir.file("cpu.db");
  DemoOptions o;
  o.scenario = "requests-cpu-contention";
  o.seed = 1;
  o.start_ns = 1'790'000'000'000'000'000;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  MetricsRegistry reg;
  collector::RequestMetricsFeed feed(reg);
  // Every series exists at 0 before any pass: rate() then sees a cause's first time lost.
  for (const char* metric : {"ttft", "itl"})
    for (const char* cause : {"cpu_contention", "prefill_interference", "nccl_straggler", "queueing", "unexplained"}) {
      CAPTURE(cause);
      const auto at_start = reg.snapshot().requests.time_lost;
      REQUIRE(at_start.count({metric, cause}) == 1);
      CHECK(at_start.at({metric, cause}) == 0.0);
    }
  auto sid = requests::request_latency_json(db->get(), {});
  REQUIRE(sid);
  feed.publish_time_lost(db->get(), (*sid)["session_id"].get<int64_t>());
  const auto lost = reg.snapshot().requests.time_lost;
  for (requests::Metric m : {requests::Metric::ttft, requests::Metric::itl}) {
    requests::RequestQuery q;
    q.metric = m;
    auto r = requests::request_latency_json(db->get(), q);
    REQUIRE(r);
    const nlohmann::json& semconv = (*r)["requests"]["semconv"];
    CAPTURE(semconv.dump());
    CHECK(semconv["causeway_requests_total"] == (*r)["requests"]["count"]);
    CHECK(semconv["gen_ai_server_time_to_first_token_seconds"]["count"] == (*r)["requests"]["ttft_ms"]["n"]);
    const nlohmann::json& causes = semconv["causeway_request_time_lost_seconds_total"]["causes"];
    REQUIRE(causes.contains("unexplained"));
    double total = 0;
    for (const auto& [cause, seconds] : causes.items()) {
      CAPTURE(cause);
      const auto it = lost.find({requests::metric_name(m), cause});
      REQUIRE(it != lost.end());
      CHECK(it->second == seconds.get<double>());
      total += seconds.get<double>();
    }
    CHECK(total > 0);
    // ...which is the tail's breakdown: each cause's share of the time above the median.
    q.chain_detail = true;
    auto detail = requests::request_latency_json(db->get(), q);
    REQUIRE(detail);
    const nlohmann::json& tail = (*detail)["requests"]["tail"];
    const double excess_s = tail["excess_ms"].get<double>() / 1e3;
    for (const auto& c : tail["causes"])
      CHECK(causes[c["cause"].get<std::string>()].get<double>() ==
            doctest::Approx(c["share_time"].get<double>() * excess_s).epsilon(0.001).scale(excess_s));
    CHECK(causes["unexplained"].get<double>() ==
          doctest::Approx(tail["unexplained_share"].get<double>() * excess_s).epsilon(0.001).scale(excess_s));
  }
  // The planted cause: the engine core lost its CPU to tar, in the token gaps' tail.
  CHECK(lost.at({"itl", "cpu_contention"}) > lost.at({"itl", "unexplained"}));
}
