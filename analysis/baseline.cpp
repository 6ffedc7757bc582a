#include "analysis/baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

}  // namespace causeway
