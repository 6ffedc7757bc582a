// diagnosis/request_latency: the JSON of `causeway requests --json` / get_request_latency, from
// requests stored by the real writer in a real SQLite file.
#include <doctest/doctest.h>

#include "diagnosis/request_latency.h"
#include "requests/to_record.h"
#include "tests/unit/request_rows.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using namespace causeway::requests;


TEST_CASE("to_record: TTFT from the request's end to the first data event, gaps in µs, E2E to the last byte") {
  Request r = streamed("a", 0, 50, 4, 20);
  RequestRecord o = to_record(r);
  CHECK(*o.ttft_ns == 50'000'000);
  CHECK(o.itl_us == "[20000,20000,20000]");
  CHECK(*o.itl_max_ns == 20'000'000);
  CHECK(*o.e2e_ns == 1'000'000 + 50'000'000 + 60'000'000 + 1'000'000);
  CHECK(o.events == 4);
  Request plain = r;
  plain.streamed = false;
  plain.token_ns.clear();
  CHECK(*to_record(plain).ttft_ns == 100);  // not streamed: the first response byte
  CHECK_FALSE(to_record(plain).itl_max_ns);
}

TEST_CASE("request_latency_json: percentiles, groups, filters, slowest by metric") {
  test::TempDir dir;
  const std::string db = dir.file("t.db");
  {
    auto w = StoreWriter::open(db);
    REQUIRE(w);
    SessionInfo info;
    info.source_kind = "live";
    info.started_ns = 1'700'000'000'000'000'000;
    REQUIRE((*w)->begin_session(info));
    for (int i = 0; i < 99; ++i) (*w)->push_meta(to_record(streamed("r" + std::to_string(i), i * 10, 10, 5, 2)));
    (*w)->push_meta(to_record(streamed("slow", 2000, 900, 5, 30, "t2")));
    (*w)->push_meta(to_record(streamed("err", 2100, 5, 1, 0, "t2", 500)));
    REQUIRE((*w)->close(1'700'000'000'000'000'000 + 3'000'000'000));
  }
  auto h = open_read_only(db);
  REQUIRE(h);
  RequestQuery q;
  auto r = request_latency_json(h->get(), q);
  REQUIRE(r);
  const auto& d = (*r)["requests"];
  CHECK(d["count"] == 101);
  CHECK(d["streamed"] == 101);
  CHECK(d["errors"] == 1);
  CHECK(d["ttft_ms"]["p50"].get<double>() == doctest::Approx(10));
  CHECK(d["ttft_ms"]["max"].get<double>() == doctest::Approx(900));
  CHECK(d["itl_ms"]["p50"].get<double>() == doctest::Approx(2));
  CHECK(d["itl_ms"]["max"].get<double>() == doctest::Approx(30));
  CHECK(d["by"].size() == 2);  // (pid, path, tenant)
  CHECK(d["slowest"][0]["request_id"] == "slow");
  CHECK(d["tail"]["metric"] == "ttft");
  CHECK(d["tail"]["units"].get<int>() >= 1);
  CHECK(d["slowest"].size() == 10);

  q.tenant = "t2";
  q.metric = Metric::itl;
  q.slowest = 1;
  r = request_latency_json(h->get(), q);
  REQUIRE(r);
  CHECK((*r)["requests"]["count"] == 2);
  CHECK((*r)["requests"]["slowest"].size() == 1);
  CHECK((*r)["requests"]["slowest"][0]["itl_max_ms"].get<double>() == doctest::Approx(30));

  q = RequestQuery{};
  q.path = "/nope";
  r = request_latency_json(h->get(), q);
  REQUIRE(r);
  CHECK((*r)["requests"]["count"] == 0);
  CHECK((*r)["requests"]["ttft_ms"]["p50"].is_null());

  q = RequestQuery{};
  q.quantile = 1.5;
  CHECK_FALSE(request_latency_json(h->get(), q));
}

TEST_CASE("request_latency_json: a long prompt's prefill during a request's slow part is prefill_interference") {
  test::TempDir dir;
  const std::string db = dir.file("t.db");
  {
    auto w = StoreWriter::open(db);
    REQUIRE(w);
    SessionInfo info;
    info.source_kind = "live";
    info.started_ns = 1'700'000'000'000'000'000;
    REQUIRE((*w)->begin_session(info));
    for (int i = 0; i < 98; ++i) {
      Request r = streamed("r" + std::to_string(i), i * 10, 10, 5, 2);
      r.prompt_bytes = 100;
      (*w)->push_meta(to_record(r));
    }
    Request slow = streamed("slow", 2000, 900, 5, 2);  // slow part: 2001..2901 ms
    slow.prompt_bytes = 100;
    Request long_prompt = streamed("long", 1990, 800, 5, 2);  // its prefill: 1991..2791 ms
    long_prompt.prompt_bytes = 50000;
    (*w)->push_meta(to_record(slow));
    (*w)->push_meta(to_record(long_prompt));
    REQUIRE((*w)->close(1'700'000'000'000'000'000 + 4'000'000'000));
  }
  auto h = open_read_only(db);
  REQUIRE(h);
  RequestQuery q;
  q.quantile = 0.98;
  auto r = request_latency_json(h->get(), q);
  REQUIRE(r);
  const auto& tail = (*r)["requests"]["tail"];
  CAPTURE(tail.dump());
  REQUIRE(tail["causes"].size() == 1);
  CHECK(tail["causes"][0]["cause"] == "prefill_interference");
  CHECK(tail["causes"][0]["culprit"]["requests"] == nlohmann::json::array({"long"}));
  // slow's 890 ms above the median: 790 ms of it under long's prefill; long's own is unexplained.
  CHECK(tail["causes"][0]["share_time"].get<double>() == doctest::Approx(790.0 / (890 + 790)).epsilon(0.01));
  CHECK(tail["unexplained_share"].get<double>() == doctest::Approx(1 - 790.0 / (890 + 790)).epsilon(0.01));
  const auto& slowest = (*r)["requests"]["slowest"];
  CHECK(slowest[0]["request_id"] == "slow");
  CHECK(slowest[0]["causes"][0]["lost_ms"].get<double>() == doctest::Approx(790));
}
