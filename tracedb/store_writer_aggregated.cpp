// Calls counted in the kernel (bpf/calls.bpf.h "Aggregated calls") into the rollups: the rows
// `stats`, fleet shipping and the per-second views read, beside the recorded calls' own.
#include <algorithm>

#include "tracedb/store_writer.h"

namespace causeway {

void StoreWriter::accumulate_aggregated(const AggregatedCallsRecord& r) {
  if (r.count == 0) return;
  batch_max_ts_ = std::max(batch_max_ts_, r.ts_ns);  // the rollups reach as far as the calls
  // A second already written keeps its row: the counts go to the first second still open
  // (a rollup row per second; the count is what must not change).
  const int64_t read_sec = r.ts_ns >= 0 ? r.ts_ns / 1'000'000'000 : 0;
  const int64_t sec = flushed_cutoff_sec_ == INT64_MAX ? read_sec : std::max(read_sec, flushed_cutoff_sec_);
  RollupAcc& acc = batch_rollups_[RollupKey{sec, r.op, r.pid}];
  acc.count += r.count;
  acc.sum += r.sum_ns;
  acc.min = std::min(acc.min, r.min_ns);
  acc.max = std::max(acc.max, r.max_ns);
  acc.errors += r.errors;
  // The kernel's buckets are this histogram's (tracedb/histogram.h): the low bound of a bucket
  // falls in the same bucket, so the merge is exact.
  for (const auto& [bucket, n] : r.hist) acc.hist.add(LatencyHistogram::bucket_low(bucket), n);
}

}  // namespace causeway
