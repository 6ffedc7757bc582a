#include "diagnosis/baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tracedb/op_catalog.h"

namespace causeway {

Baseline robust_baseline(std::vector<int64_t>& d) {
  Baseline b;
  b.n = d.size();
  if (d.empty()) return b;
  auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
  std::nth_element(d.begin(), mid, d.end());
  b.median_ns = *mid;
  auto p99 = d.begin() + static_cast<std::ptrdiff_t>(std::min(d.size() - 1, d.size() * 99 / 100));
  std::nth_element(d.begin(), p99, d.end());
  b.p99_ns = *p99;
  std::vector<int64_t> dev(d.size());
  for (size_t i = 0; i < d.size(); ++i) dev[i] = d[i] > b.median_ns ? d[i] - b.median_ns : b.median_ns - d[i];
  auto dmid = dev.begin() + static_cast<std::ptrdiff_t>(dev.size() / 2);
  std::nth_element(dev.begin(), dmid, dev.end());
  b.mad_ns = *dmid;
  return b;
}

int64_t outlier_threshold(const Baseline& b, const OutlierRule& rule) {
  if (!b.usable()) return std::numeric_limits<int64_t>::max();
  double m = static_cast<double>(b.median_ns);
  double t = std::max({m * rule.min_ratio, m + rule.min_sigmas * 1.4826 * static_cast<double>(b.mad_ns),
                       m + static_cast<double>(rule.min_excess_ns)});
  return static_cast<int64_t>(std::ceil(t));
}

std::unordered_map<uint64_t, Baseline> chunk_baselines(const std::vector<Ev>& events, int64_t from, int64_t to,
                                                       std::unordered_map<uint64_t, std::vector<int64_t>>& history) {
  std::unordered_map<uint64_t, std::vector<int64_t>> cur;
  auto lo = std::lower_bound(events.begin(), events.end(), from, [](const Ev& e, int64_t t) { return e.ts < t; });
  for (auto it = lo; it != events.end() && it->ts < to; ++it)
    if (is_traced_call_op(it->op)) cur[op_key(it->pid, it->op)].push_back(it->dur);
  std::unordered_map<uint64_t, Baseline> base;
  for (auto& [k, v] : cur) {
    std::vector<int64_t> all = v;
    if (auto p = history.find(k); p != history.end()) all.insert(all.end(), p->second.begin(), p->second.end());
    base[k] = robust_baseline(all);
  }
  // At most kHistory calls per (process, op); keys with no call in this chunk keep nothing:
  // their next chunk starts afresh.
  constexpr size_t kHistory = 4096;
  std::unordered_map<uint64_t, std::vector<int64_t>> next;
  for (auto& [k, v] : cur) {
    std::vector<int64_t>& h = next[k];
    if (v.size() < kHistory)
      if (auto p = history.find(k); p != history.end()) {
        size_t take = std::min(p->second.size(), kHistory - v.size());
        h.assign(p->second.end() - static_cast<std::ptrdiff_t>(take), p->second.end());
      }
    size_t first = v.size() > kHistory ? v.size() - kHistory : 0;
    h.insert(h.end(), v.begin() + static_cast<std::ptrdiff_t>(first), v.end());
  }
  history = std::move(next);
  return base;
}

}  // namespace causeway
