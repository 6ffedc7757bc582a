// Baselines of fast-counted ops from the rollups' histograms (diagnosis/rollup_baselines.h): the
// same outlier rule as the rows' baseline, and each rollup second read once.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "bpf/events.h"
#include "diagnosis/baseline.h"
#include "diagnosis/chunk_sizing.h"
#include "diagnosis/event_row.h"
#include "diagnosis/rollup_baselines.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;

namespace {

constexpr uint32_t kRollupPid = 4242;

// A rollup row of `durs` for (op, kRollupPid) at second `sec` of session 1.
void insert_rollup(sqlite3* db, uint16_t op, int64_t sec, const std::vector<int64_t>& durs) {
  LatencyHistogram h;
  int64_t lo = INT64_MAX, hi = 0;
  for (int64_t d : durs) {
    h.add(static_cast<uint64_t>(d));
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  auto st = Statement::prepare(db, "INSERT INTO rollups (session_id, op_id, pid, sec, count, sum_ns, min_ns, max_ns, errors, hist) "
                                   "VALUES (1, ?1, ?2, ?3, ?4, 0, ?5, ?6, 0, ?7)");
  REQUIRE(st.ok());
  st->bind(1, int64_t{op});
  st->bind(2, int64_t{kRollupPid});
  st->bind(3, sec);
  st->bind(4, static_cast<int64_t>(durs.size()));
  st->bind(5, lo);
  st->bind(6, hi);
  const std::string blob = h.encode();
  st->bind_blob(7, blob.data(), blob.size());
  REQUIRE(st->step() == SQLITE_DONE);
}

}  // namespace

TEST_CASE("a launch op's baseline from its histogram judges the calls its rows' baseline judges") {
  // 20 µs launches with ±1.5 µs of jitter, 3% of them 2 ms slow.
  std::mt19937 rng(7);
  std::normal_distribution<double> jitter(20'000, 1'500);
  std::vector<int64_t> durs;
  LatencyHistogram h;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < 20'000; ++i) {
    const auto d = i % 33 == 0 ? int64_t{2'000'000} : static_cast<int64_t>(jitter(rng));
    durs.push_back(d);
    h.add(static_cast<uint64_t>(d));
    lo = std::min<uint64_t>(lo, d);
    hi = std::max<uint64_t>(hi, d);
  }
  std::vector<int64_t> copy = durs;
  const Baseline rows = robust_baseline(copy);
  const Baseline hist = histogram_baseline(h, lo, hi);
  CHECK(hist.n == rows.n);
  // Within a bucket: 1/128 of the octave (20 µs: 128 ns).
  const int64_t bucket = 16'384 / 128;
  CHECK(std::abs(hist.median_ns - rows.median_ns) <= bucket);
  CHECK(std::abs(hist.mad_ns - rows.mad_ns) <= bucket);
  CHECK(std::abs(hist.p99_ns - 2'000'000) <= 2'000'000 / 128);  // the slow 3% hold the p99
  // The slow calls are outliers against either; the jittered ones against neither.
  CHECK(is_outlier(hist, 2'000'000));
  CHECK(is_outlier(rows, 2'000'000));
  CHECK_FALSE(is_outlier(hist, 40'000));
  CHECK(outlier_threshold(hist) - outlier_threshold(rows) <= 2 * bucket);
  CHECK(outlier_threshold(rows) - outlier_threshold(hist) <= 2 * bucket);
  // An empty histogram is no baseline.
  CHECK_FALSE(histogram_baseline(LatencyHistogram{}, 0, 0).usable());
}

TEST_CASE("rollup seconds: only fast-counted ops, each second handed on once, baselines over the seconds asked") {
  test::TempDir dir;
  auto db = open_for_write(dir.file("r.db"));
  REQUIRE(db.ok());
  REQUIRE(exec_sql(db->get(), "INSERT INTO sessions (id, source_kind, tool_version, started_ns) VALUES (1, 'live', 't', 0)").ok());
  const std::vector<int64_t> fast(100, 10'000), slow(100, 50'000);
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 10, fast);
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 11, slow);
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 11, slow);  // a late row of the same second: they sum
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 12, fast);
  insert_rollup(db->get(), CW_OP_CUDA_STREAM_SYNC, 10, fast);  // recorded call by call: its rows are its baseline

  const uint64_t key = op_key(kRollupPid, CW_OP_CUDA_LAUNCH_KERNEL);
  RollupSeconds secs;
  uint64_t handed = 0;
  int calls = 0;
  auto on_new = [&](uint64_t k, const OpRollup& r) {
    CHECK(k == key);
    handed += r.count;
    ++calls;
  };
  REQUIRE(secs.read(db->get(), 1, 10, 12, on_new).ok());
  CHECK(calls == 2);
  CHECK(handed == 300);
  auto base = secs.baselines(10, 12);
  REQUIRE(base.count(key) == 1);
  CHECK(base.count(op_key(kRollupPid, CW_OP_CUDA_STREAM_SYNC)) == 0);
  CHECK(base[key].n == 300);
  CHECK(std::abs(base[key].median_ns - 50'000) <= 50'000 / 128);  // 200 of 300 calls at 50 µs
  // Seconds 10 and 11 again, and 12 for the first time: only 12 is handed on.
  REQUIRE(secs.read(db->get(), 1, 10, 13, on_new).ok());
  CHECK(calls == 3);
  CHECK(handed == 400);
  secs.forget_before(11);
  CHECK(secs.baselines(10, 13)[key].n == 300);  // 11 and 12
  CHECK(std::abs(secs.baselines(12, 13)[key].median_ns - 10'000) <= 10'000 / 128);
}

TEST_CASE("the rollups' peak calls per second, read a poll at a time, is the whole session's") {
  test::TempDir dir;
  auto db = open_for_write(dir.file("p.db"));
  REQUIRE(db.ok());
  REQUIRE(exec_sql(db->get(), "INSERT INTO sessions (id, source_kind, tool_version, started_ns) VALUES (1, 'live', 't', 0)").ok());
  RollupPeak peak;
  auto per_sec = [&](RollupPeak& p) {
    auto r = p.read(db->get(), 1);
    REQUIRE(r.ok());
    return static_cast<int64_t>(*r * 1e9 + 0.5);
  };
  CHECK(per_sec(peak) == 0);  // no rollups yet
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 10, std::vector<int64_t>(300, 10'000));
  insert_rollup(db->get(), CW_OP_CUDA_STREAM_SYNC, 10, std::vector<int64_t>(100, 10'000));  // every op counts
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 11, std::vector<int64_t>(200, 10'000));
  CHECK(per_sec(peak) == 400);
  // The next poll reads only what came since: a late row of second 11, and second 12.
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 11, std::vector<int64_t>(250, 10'000));
  insert_rollup(db->get(), CW_OP_CUDA_LAUNCH_KERNEL, 12, std::vector<int64_t>(100, 10'000));
  CHECK(per_sec(peak) == 450);
  RollupPeak fresh;  // read once, as an offline diagnosis does
  CHECK(per_sec(fresh) == 450);
}
