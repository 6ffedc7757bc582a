#include "diagnosis/rollup_baselines.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnosis/event_row.h"
#include "tracedb/op_recording.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

void OpRollup::merge(const OpRollup& o) {
  count += o.count;
  min_ns = std::min(min_ns, o.min_ns);
  max_ns = std::max(max_ns, o.max_ns);
  hist.merge(o.hist);
}

namespace {

// A bucket's midpoint, as LatencyHistogram::percentile reports it, within the exact extremes.
uint64_t rollup_bucket_mid(uint32_t bucket, uint64_t min_ns, uint64_t max_ns) {
  const uint64_t lo = LatencyHistogram::bucket_low(bucket), hi = LatencyHistogram::bucket_high(bucket);
  return std::clamp(lo + (hi - lo) / 2, std::min(min_ns, max_ns), max_ns);
}

// The value of rank `rank` (1-based) among (value, count) pairs sorted by value.
uint64_t rollup_value_at_rank(const std::vector<std::pair<uint64_t, uint64_t>>& sorted, uint64_t rank) {
  uint64_t seen = 0;
  for (const auto& [v, n] : sorted) {
    seen += n;
    if (seen >= rank) return v;
  }
  return sorted.empty() ? 0 : sorted.back().first;
}

}  // namespace

Baseline histogram_baseline(const LatencyHistogram& hist, uint64_t min_ns, uint64_t max_ns) {
  Baseline b;
  b.n = hist.total();
  if (b.n == 0) return b;
  std::vector<std::pair<uint64_t, uint64_t>> values;  // bucket midpoints, ascending
  hist.for_each_bucket([&](uint32_t k, uint64_t n) { values.emplace_back(rollup_bucket_mid(k, min_ns, max_ns), n); });
  const uint64_t mid_rank = b.n / 2 + 1;
  const uint64_t median = rollup_value_at_rank(values, mid_rank);
  b.median_ns = static_cast<int64_t>(median);
  b.p99_ns = static_cast<int64_t>(rollup_value_at_rank(values, std::min<uint64_t>(b.n - 1, b.n * 99 / 100) + 1));
  std::vector<std::pair<uint64_t, uint64_t>> devs;
  devs.reserve(values.size());
  for (const auto& [v, n] : values) devs.emplace_back(v > median ? v - median : median - v, n);
  std::sort(devs.begin(), devs.end());
  b.mad_ns = static_cast<int64_t>(rollup_value_at_rank(devs, mid_rank));
  return b;
}

Result<void> RollupSeconds::read(sqlite3* db, int64_t session_id, int64_t from_sec, int64_t to_sec,
                                 const OnNewSecond& on_new) {
  const int64_t start = std::max(from_sec, read_to_sec_);
  if (start >= to_sec) return {};
  // rollups_session_sec (schemas/trace.sql) serves the range; a DB from before it still answers.
  auto st = Statement::prepare(db,
                               "SELECT sec, op_id, pid, count, min_ns, max_ns, hist FROM rollups "
                               "WHERE session_id = ?1 AND sec >= ?2 AND sec < ?3");
  if (!st) return st.error();
  st->bind(1, session_id);
  st->bind(2, start);
  st->bind(3, to_sec);
  std::map<int64_t, std::unordered_map<uint64_t, OpRollup>> fresh;
  while (st->step() == SQLITE_ROW) {
    const auto op = static_cast<uint16_t>(st->col_int(1));
    if (!is_fast_counted_op(op) || st->col_int(3) <= 0) continue;
    OpRollup r;
    r.count = static_cast<uint64_t>(st->col_int(3));
    r.min_ns = static_cast<uint64_t>(std::max<int64_t>(0, st->col_int(4)));
    r.max_ns = static_cast<uint64_t>(std::max<int64_t>(0, st->col_int(5)));
    const void* blob = sqlite3_column_blob(st->get(), 6);
    const int len = sqlite3_column_bytes(st->get(), 6);
    // A malformed blob merges nothing: the row still counts, at no duration.
    if (blob && len > 0) (void)r.hist.merge_encoded(std::string_view(static_cast<const char*>(blob), static_cast<size_t>(len)));
    // A second may have several rows (late events): they sum.
    fresh[st->col_int(0)][op_key(static_cast<uint32_t>(st->col_int(2)), op)].merge(r);
  }
  read_to_sec_ = to_sec;
  for (auto& [sec, keys] : fresh) {
    for (const auto& [key, r] : keys) on_new(key, r);
    secs_[sec] = std::move(keys);
  }
  return {};
}

std::unordered_map<uint64_t, Baseline> RollupSeconds::baselines(int64_t from_sec, int64_t to_sec) const {
  std::unordered_map<uint64_t, OpRollup> sum;
  for (auto it = secs_.lower_bound(from_sec); it != secs_.end() && it->first < to_sec; ++it)
    for (const auto& [key, r] : it->second) sum[key].merge(r);
  std::unordered_map<uint64_t, Baseline> out;
  for (const auto& [key, r] : sum)
    if (r.hist.total() > 0) out[key] = histogram_baseline(r.hist, r.min_ns, r.max_ns);
  return out;
}

void RollupSeconds::forget_before(int64_t sec) { secs_.erase(secs_.begin(), secs_.lower_bound(sec)); }

}  // namespace causeway
