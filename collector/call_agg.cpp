#include "collector/call_agg.h"

#include <algorithm>

#include "tracedb/histogram.h"

namespace causeway::collector {

static_assert(sizeof(cw_agg_key) == 8 && sizeof(cw_agg_value) == 56 + 8 * CW_AGG_BUCKETS);
// The kernel's buckets are the trace DB's: the last one holds CW_AGG_MAX_NS - 1.
static_assert(CW_AGG_BUCKETS == LatencyHistogram::kSub + (20 - 1 - LatencyHistogram::kSubBits) * LatencyHistogram::kSub +
                                    LatencyHistogram::kSub);

CallAggTotals merge_percpu(std::span<const cw_agg_value> per_cpu) {
  CallAggTotals t;
  add_percpu(t, per_cpu);
  return t;
}

void add_percpu(CallAggTotals& t, std::span<const cw_agg_value> per_cpu) {
  t.hist.resize(CW_AGG_BUCKETS, 0);
  for (const cw_agg_value& v : per_cpu) {
    if (v.count == 0) continue;
    t.min_ns = t.count == 0 ? v.min_ns : std::min<uint64_t>(t.min_ns, v.min_ns);
    t.first_ns = t.count == 0 ? v.first_ns : std::min<uint64_t>(t.first_ns, v.first_ns);
    t.max_ns = std::max<uint64_t>(t.max_ns, v.max_ns);
    t.last_ns = std::max<uint64_t>(t.last_ns, v.last_ns);
    t.count += v.count;
    t.errors += v.errors;
    t.sum_ns += v.sum_ns;
    for (size_t b = 0; b < CW_AGG_BUCKETS; ++b) t.hist[b] += v.hist[b];
  }
}

AggregatedCallsRecord aggregate_delta(const CallAggTotals& now, const CallAggTotals* before, uint32_t pid, uint16_t op) {
  AggregatedCallsRecord r;
  r.pid = pid;
  r.op = op;
  const uint64_t before_count = before ? before->count : 0;
  if (now.count <= before_count) return r;
  r.count = now.count - before_count;
  r.errors = now.errors - (before ? before->errors : 0);
  r.sum_ns = now.sum_ns - (before ? before->sum_ns : 0);
  r.ts_ns = static_cast<int64_t>(now.last_ns);
  uint32_t lo = UINT32_MAX, hi = 0;
  for (uint32_t b = 0; b < now.hist.size(); ++b) {
    const uint64_t had = before && b < before->hist.size() ? before->hist[b] : 0;
    if (now.hist[b] <= had) continue;
    r.hist.emplace_back(b, now.hist[b] - had);
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  if (r.hist.empty()) return r;
  r.min_ns = std::max<uint64_t>(now.min_ns, LatencyHistogram::bucket_low(lo));
  r.max_ns = std::min<uint64_t>(now.max_ns, LatencyHistogram::bucket_high(hi));
  return r;
}

}  // namespace causeway::collector
