// Stats answered from rollups + raw edges must match exact percentiles over raw data.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "diagnosis/stats.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using causeway::test::TempDir;

namespace {

constexpr int64_t kT0 = 1'790'000'000'250'000'000;  // not on a second boundary, on purpose

struct Truth {
  std::vector<int64_t> ts, dur;
  std::vector<uint32_t> pid;
  std::vector<uint16_t> op;
};

uint64_t exact_pct(std::vector<uint64_t> v, double q) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

void check_close(uint64_t approx, uint64_t exact) {
  double rel = exact ? std::abs(static_cast<double>(approx) - static_cast<double>(exact)) / static_cast<double>(exact) : 0;
  CHECK(rel <= 0.01);
}

}  // namespace

TEST_CASE("rollup percentiles are within 1% of exact ones over random data and any window") {
  TempDir dir;
  std::string path = dir.file("t.db");
  std::mt19937_64 gen(7);
  std::lognormal_distribution<double> fast(9.5, 0.6), slow(15.0, 1.0);
  Truth t;
  {
    auto w = StoreWriter::open(path);
    REQUIRE(w.ok());
    SessionInfo s{.source_kind = "live", .label = "random", .started_ns = kT0};
    REQUIRE((*w)->begin_session(s).ok());
    int64_t ts = kT0;
    for (int i = 0; i < 300'000; ++i) {
      ts += static_cast<int64_t>(gen() % 400'000);  // ~60 s of data, irregular spacing
      CallRecord r;
      r.ts_ns = ts;
      r.op = (i % 3 == 0) ? 116 : 112;
      r.pid = (i % 5 == 0) ? 200 : 100;
      r.tid = r.pid;
      r.dur_ns = static_cast<int64_t>((gen() % 20 == 0) ? slow(gen) : fast(gen));
      r.ret = (i % 1000 == 0) ? 700 : 0;
      (*w)->push_wait(r);
      t.ts.push_back(r.ts_ns);
      t.dur.push_back(r.dur_ns);
      t.pid.push_back(r.pid);
      t.op.push_back(r.op);
    }
    REQUIRE((*w)->close(ts + 1).ok());
  }
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  for (std::optional<int64_t> since : {std::optional<int64_t>{}, std::optional<int64_t>{30'500'000'000},
                                       std::optional<int64_t>{1'700'000'000}, std::optional<int64_t>{400'000'000}}) {
    StatsQuery q;
    q.since_ns = since;
    auto r = compute_stats(db->get(), q);
    REQUIRE(r.ok());
    std::map<std::pair<uint16_t, uint32_t>, std::vector<uint64_t>> groups;
    for (size_t i = 0; i < t.ts.size(); ++i)
      if (t.ts[i] >= r->from_ns && t.ts[i] <= r->to_ns) groups[{t.op[i], t.pid[i]}].push_back(static_cast<uint64_t>(t.dur[i]));
    CAPTURE(since.value_or(-1));
    REQUIRE(r->ops.size() == groups.size());
    for (const OpStats& o : r->ops) {
      uint16_t op = o.op == "cudaStreamSynchronize" ? 116 : 112;
      const auto& v = groups[{op, o.pid}];
      CHECK(o.count == v.size());
      CHECK(o.max_ns == *std::max_element(v.begin(), v.end()));
      uint64_t total = 0;
      for (auto d : v) total += d;
      CHECK(o.total_ns == total);
      check_close(o.p50_ns, exact_pct(v, 0.50));
      check_close(o.p95_ns, exact_pct(v, 0.95));
      check_close(o.p99_ns, exact_pct(v, 0.99));
      CHECK(o.p50_ns <= o.p95_ns);
      CHECK(o.p95_ns <= o.p99_ns);
      CHECK(o.p99_ns <= o.max_ns);
    }
  }
}

TEST_CASE("filters by pid, source and op, and top_n, cut the answer as asked") {
  TempDir dir;
  std::string path = dir.file("demo.db");
  REQUIRE(run_demo(path, DemoOptions{.scenario = "nccl-straggler", .seed = 3}).ok());
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto all = compute_stats(db->get(), StatsQuery{});
  REQUIRE(all.ok());
  CHECK(all->ops.size() >= 12);  // 4 ranks x (launch, allreduce, sync, init)
  auto one = compute_stats(db->get(), StatsQuery{.pid = 6003});
  REQUIRE(one.ok());
  for (const auto& o : one->ops) CHECK(o.pid == 6003);
  auto nccl = compute_stats(db->get(), StatsQuery{.source = std::string("nccl")});
  REQUIRE(nccl.ok());
  for (const auto& o : nccl->ops) CHECK(o.source == "nccl");
  auto sync = compute_stats(db->get(), StatsQuery{.op = std::string("cudaStreamSynchronize"), .top_n = 2});
  REQUIRE(sync.ok());
  CHECK(sync->ops.size() == 2);
  CHECK(sync->truncated);
  CHECK(sync->ops[0].total_ns >= sync->ops[1].total_ns);
  auto j = stats_to_json(*all);
  CHECK(j["ops"].is_array());
  CHECK(j["window"]["from_ns"].get<int64_t>() < j["window"]["to_ns"].get<int64_t>());
}

TEST_CASE("an empty DB answers no_data, not an empty success") {
  TempDir dir;
  std::string path = dir.file("empty.db");
  {
    auto w = open_for_write(path);
    REQUIRE(w.ok());
    close_writer_cleanly(*w);
  }
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto r = compute_stats(db->get(), StatsQuery{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "no_data");
}

TEST_CASE("stats_to_table: a session's table names it; the fleet's (no session, id 0) says no 'session 0'") {
  StatsResult one;
  one.session_id = 3;
  one.from_ns = 1'790'000'000'000'000'000;
  one.to_ns = one.from_ns + 30'000'000'000;
  CHECK(stats_to_table(one).rfind("session 3, window ", 0) == 0);
  one.session_id = 0;
  const std::string fleet = stats_to_table(one);
  CHECK(fleet.rfind("window ", 0) == 0);
  CHECK(fleet.find("session 0") == std::string::npos);
}
