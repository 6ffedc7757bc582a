// `stats` over a large session: answered from rollups vs the same answer by scanning raw
// events (exact percentiles by sorting), measured in one run on the same DB.
//
//   bench_stats [EVENTS=10000000] [DB=bench-stats.db]   (reuses DB if it exists)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include "diagnosis/stats.h"
#include "synth/scenarios.h"
#include "tracedb/event_columns.h"
#include "tracedb/op_catalog.h"
#include "tracedb/open.h"

using namespace causeway;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Exact {
  uint64_t count = 0, p99 = 0;
};

std::map<std::pair<int64_t, int64_t>, Exact> raw_scan(sqlite3* db) {
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> durs;
  constexpr EventColumns<3> kCols{{EventCol::op_id, EventCol::pid, EventCol::dur_ns}};
  auto st = Statement::prepare(db, "SELECT " + kCols.sql() + " FROM events WHERE session_id = (SELECT max(id) FROM sessions)");
  while (st->step() == SQLITE_ROW)
    durs[{st->col_int(kCols.at(EventCol::op_id)), st->col_int(kCols.at(EventCol::pid))}].push_back(
        st->col_int(kCols.at(EventCol::dur_ns)));
  std::map<std::pair<int64_t, int64_t>, Exact> out;
  for (auto& [k, v] : durs) {
    std::sort(v.begin(), v.end());
    size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
    out[k] = Exact{v.size(), static_cast<uint64_t>(v[rank - 1])};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  std::string path = argc > 2 ? argv[2] : "bench-stats.db";
  if (!std::filesystem::exists(path)) {
    auto t = Clock::now();
    auto r = run_demo(path, DemoOptions{.scenario = "quiet", .seed = 1, .events = n});
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 1;
    }
    std::printf("generated %llu events in %.1f s (demo generation + writer)\n",
                static_cast<unsigned long long>(r->events_written), since(t));
  }
  auto db = open_read_only(path);
  if (!db) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  auto events = query_int(db->get(), "SELECT count(*) FROM events")->value_or(0);
  double best = 1e9;
  StatsResult result;
  for (int i = 0; i < 5; ++i) {
    auto t = Clock::now();
    auto r = compute_stats(db->get(), StatsQuery{});
    best = std::min(best, since(t));
    if (!r) return 1;
    result = *r;
  }
  auto t = Clock::now();
  auto exact = raw_scan(db->get());
  double scan = since(t);
  double worst_rel = 0;
  bool counts_match = true;
  for (const auto& o : result.ops) {
    for (const auto& [k, e] : exact) {
      auto op = find_op(static_cast<uint16_t>(k.first));
      if (!op || op->name != o.op || static_cast<uint32_t>(k.second) != o.pid) continue;
      counts_match &= e.count == o.count;
      worst_rel = std::max(worst_rel, std::abs(static_cast<double>(o.p99_ns) - static_cast<double>(e.p99)) /
                                          static_cast<double>(e.p99));
    }
  }
  std::printf("events in session             %lld\n", static_cast<long long>(events));
  std::printf("stats from rollups (best of 5) %.4f s\n", best);
  std::printf("same answer by raw scan        %.3f s\n", scan);
  std::printf("speed-up                       %.0fx\n", scan / best);
  std::printf("counts match raw scan          %s\n", counts_match ? "yes" : "NO");
  std::printf("worst p99 relative error       %.4f%%\n", worst_rel * 100);
  return counts_match && worst_rel <= 0.01 ? 0 : 1;
}
