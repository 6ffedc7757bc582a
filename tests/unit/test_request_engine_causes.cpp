// queueing and kv_cache_pressure from rows (docs/INFERENCE.md "Causes keyed to requests"):
// requests and the engine's scraped metrics written by the real writer to a real SQLite
// file, then asked through request_latency_json.
#include <doctest/doctest.h>

#include "requests/latency.h"
#include "requests/to_record.h"
#include "tests/unit/request_rows.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using namespace causeway::requests;
using json = nlohmann::json;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;

// Three tokens 20 ms apart, the gap before token `at` (1-based) `gap_ms` long instead.
Request stream(const std::string& id, int64_t start_ms, int64_t ttft_ms, size_t at = 0, int64_t gap_ms = 20) {
  Request r = streamed(id, start_ms, ttft_ms, 4, 20, "t");
  r.prompt_bytes = 200;
  for (size_t i = at; at && i < r.token_ns.size(); ++i) r.token_ns[i] += (gap_ms - 20) * kMs;
  r.last_byte_ns = r.token_ns.back() + kMs;
  return r;
}

// One scrape of a vLLM-shaped endpoint at `ms`.
EngineSampleRecord scrape(int64_t ms, double running, double waiting, double kv, double preemptions) {
  EngineSampleRecord r;
  r.ts_ns = kT0 + ms * kMs;
  r.pid = 100;
  r.engine = "vllm";
  r.url = "http://127.0.0.1:8000/metrics";
  const std::string l = "engine=\"0\",model_name=\"m\"";
  r.samples = {{"vllm:num_requests_running", l, running},
               {"vllm:num_requests_waiting", l, waiting},
               {"vllm:kv_cache_usage_perc", l, kv},
               {"vllm:gpu_cache_usage_perc", l, kv},  // the deprecated twin: not counted twice
               {"vllm:num_preemptions_total", l, preemptions}};
  return r;
}

struct Db {
  test::TempDir dir;
  std::string path = dir.file("t.db");
  template <typename F>
  explicit Db(F fill) {
    auto w = StoreWriter::open(path);
    REQUIRE(w);
    SessionInfo info;
    info.source_kind = "live";
    info.started_ns = kT0;
    REQUIRE((*w)->begin_session(info));
    fill(**w);
    REQUIRE((*w)->close(kT0 + 10'000 * kMs));
  }
  json ask(Metric m, double q) {
    auto h = open_read_only(path);
    REQUIRE(h);
    RequestQuery rq;
    rq.metric = m;
    rq.quantile = q;
    auto r = request_latency_json(h->get(), rq);
    REQUIRE(r);
    return *r;
  }
};

const json* cause(const json& tail, const std::string& name) {
  for (const auto& c : tail["causes"])
    if (c["cause"] == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("queueing: requests that waited for their first token while the engine reported requests waiting") {
  Db db([](StoreWriter& w) {
    // 90 quick requests (TTFT 20 ms) from 0 to 4.5 s, the engine idle-ish: nothing waits.
    for (int i = 0; i < 90; ++i) w.push_meta(to_record(stream("q" + std::to_string(i), i * 50, 20)));
    // A burst at 6 s: ten requests whose first token comes 400..850 ms later.
    for (int i = 0; i < 10; ++i) w.push_meta(to_record(stream("b" + std::to_string(i), 6000, 400 + 50 * i)));
    for (int s = 0; s <= 90; ++s) {
      const int64_t ms = s * 100;
      const bool burst = ms >= 6000 && ms <= 6900;
      w.push_meta(scrape(ms, burst ? 4 : 1, burst ? 6 : 0, 0.2, 0));
    }
  });
  json d = db.ask(Metric::ttft, 0.91);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* q = cause(tail, "queueing");
  REQUIRE(q != nullptr);
  CHECK((*q)["requests"] == 10);  // the burst, and only it
  CHECK((*q)["culprit"]["pid"] == 100);
  CHECK((*q)["culprit"]["waiting_max"] == 6);
  CHECK((*q)["share_time"].get<double>() >= 0.9);
  CHECK(cause(tail, "kv_cache_pressure") == nullptr);  // no preemption
  const json& slowest = d["requests"]["slowest"][0];
  CHECK(slowest["request_id"] == "b9");
  CHECK(slowest["causes"][0]["cause"] == "queueing");
  CHECK(d["engines"].size() == 1);
  CHECK(d["engines"][0]["engine"] == "vllm");
  CHECK(d["engines"][0]["samples"] == 91);

  // The token gaps of running requests are never queueing.
  json itl = db.ask(Metric::itl, 0.9);
  CHECK(cause(itl["requests"]["tail"], "queueing") == nullptr);
}

TEST_CASE("kv_cache_pressure: token gaps of requests stalled while the full cache preempted requests") {
  Db db([](StoreWriter& w) {
    for (int i = 0; i < 95; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20)));
    // Preempted at 6 s: a 500 ms gap between their tokens.
    for (int i = 0; i < 5; ++i) w.push_meta(to_record(stream("p" + std::to_string(i), 5900, 20, 2, 500)));
    for (int s = 0; s <= 90; ++s) {
      const int64_t ms = s * 100;
      const bool full = ms >= 5900 && ms <= 6500;
      w.push_meta(scrape(ms, 4, 0, full ? 0.97 : 0.3, ms < 6000 ? 0 : ms < 6200 ? 2 : 3));
    }
  });
  json d = db.ask(Metric::itl, 0.99);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* k = cause(tail, "kv_cache_pressure");
  REQUIRE(k != nullptr);
  CHECK((*k)["requests"] == 5);
  CHECK((*k)["culprit"]["kv_cache_usage"].get<double>() == doctest::Approx(0.97));
  CHECK((*k)["culprit"]["preemptions"] == 3);
  CHECK((*k)["share_time"].get<double>() >= 0.9);
  CHECK(cause(tail, "queueing") == nullptr);
}

TEST_CASE("engine causes: a full cache with no preemption, or no metrics at all, claims nothing") {
  Db full([](StoreWriter& w) {
    for (int i = 0; i < 95; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20)));
    for (int i = 0; i < 5; ++i) w.push_meta(to_record(stream("s" + std::to_string(i), 6000, 20, 1, 400)));
    for (int s = 0; s <= 90; ++s) w.push_meta(scrape(s * 100, 4, 0, 0.99, 7));  // constant counter
  });
  json d = full.ask(Metric::itl, 0.95);
  CHECK(d["requests"]["tail"]["causes"].empty());
  CHECK(d["requests"]["tail"]["unexplained_share"] == 1.0);

  Db none([](StoreWriter& w) {
    for (int i = 0; i < 10; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20 + i * 100)));
  });
  d = none.ask(Metric::ttft, 0.5);
  CHECK(d["requests"]["tail"]["causes"].empty());
  CHECK(d["engines"].empty());
}
