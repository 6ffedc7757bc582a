#include "diagnosis/engine_series.h"

#include <algorithm>
#include <string>

#include "requests/engine_names.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {

std::map<uint32_t, EngineSeries> load_engine_series(sqlite3* db, int64_t session_id) {
  std::map<uint32_t, EngineSeries> out;
  std::string in;
  std::map<std::string, std::pair<Role, size_t>> role_of;  // name → (role, rank among the role's names)
  for (Role r : {Role::running, Role::waiting, Role::kv_cache_usage, Role::preemptions}) {
    size_t rank = 0;
    for (std::string_view n : role_names(r)) {
      role_of[std::string(n)] = {r, rank++};
      in += std::string(in.empty() ? "" : ",") + "'" + std::string(n) + "'";
    }
  }
  auto st = Statement::prepare(db,
                               "SELECT pid, ts_ns, name, sum(value) FROM engine_metrics WHERE session_id = ?1 AND name IN (" +
                                   in + ") GROUP BY pid, ts_ns, name ORDER BY pid, ts_ns");
  if (!st) return out;  // a DB older than the engine tables
  st->bind(1, session_id);
  std::map<std::pair<uint32_t, int64_t>, size_t> kv_rank;  // the KV name a point's value came from
  while (st->step() == SQLITE_ROW) {
    const auto pid = static_cast<uint32_t>(st->col_int(0));
    const int64_t ts = st->col_int(1);
    auto it = role_of.find(st->col_text(2));
    if (it == role_of.end()) continue;
    const double v = st->col_double(3);
    EngineSeries& s = out[pid];
    if (s.points.empty() || s.points.back().ts_ns != ts) s.points.push_back(EnginePoint{ts, {}, {}, {}, {}});
    EnginePoint& p = s.points.back();
    const auto [role, rank] = it->second;
    switch (role) {
      case Role::running: p.running = v; break;
      case Role::waiting: p.waiting = v; break;
      case Role::preemptions: p.preemptions = v; break;
      case Role::kv_cache_usage: {
        auto [k, fresh] = kv_rank.try_emplace({pid, ts}, rank);
        if (fresh || rank <= k->second) p.kv_cache_usage = v, k->second = rank;
        break;
      }
    }
  }
  for (auto& [pid, s] : out) {
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < s.points.size(); ++i) gaps.push_back(s.points[i].ts_ns - s.points[i - 1].ts_ns);
    if (gaps.empty()) {
      s.spacing_ns = 1'000'000'000;  // one scrape: the default interval
      continue;
    }
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    s.spacing_ns = gaps[gaps.size() / 2];
  }
  return out;
}

double covered_ns(std::vector<std::pair<int64_t, int64_t>> spans, int64_t from, int64_t to) {
  for (auto& [a, b] : spans) a = std::max(a, from), b = std::min(b, to);
  std::erase_if(spans, [](const auto& s) { return s.second <= s.first; });
  if (spans.empty()) return 0;
  std::sort(spans.begin(), spans.end());
  double total = 0;
  int64_t c0 = spans[0].first, c1 = spans[0].second;
  for (const auto& [a, b] : spans) {
    if (a > c1) {
      total += static_cast<double>(c1 - c0);
      c0 = a;
    }
    c1 = std::max(c1, b);
  }
  return total + static_cast<double>(c1 - c0);
}

}  // namespace causeway::requests
