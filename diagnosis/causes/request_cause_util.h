// Small pieces the request cause modules share (diagnosis/causes/request_*.cpp and the chains).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

namespace causeway::requests {

// "12,34,56" for an SQL `IN (…)` (pids are numbers: nothing to quote).
inline std::string sql_id_list(const std::vector<uint32_t>& ids) {
  std::string in;
  for (uint32_t id : ids) in += (in.empty() ? "" : ",") + std::to_string(id);
  return in;
}

// "12.3": a number in a chain's words, one decimal.
inline std::string one_decimal(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// How long [a0, a1] and [b0, b1] overlap, in ns (0 when they do not).
inline double overlap_ns(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  return static_cast<double>(std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0)));
}

}  // namespace causeway::requests
