// Baselines and per-op statistics of the ops whose fast calls are counted in the kernel
// (tracedb/op_recording.h `fast_counted`: launches), from the rollups' per-second histograms
// rather than from event rows (docs/DIAGNOSIS.md "Baselines of counted ops").
//
// Why: by default a launch leaves the kernel as a row only when it can explain something (slow,
// failed, first at its site, first after a host gap), so the rows of a launch op are a biased
// sample and their median is not the op's. The rollups hold every call either way — counted in
// the kernel or stored as a row with --record-all — so a baseline read from them is the same in
// both stores, and so are the chains judged against it (docs/COLLECTOR.md "Same answers either
// way"). A session without rollups (an old DB, rows written by hand) keeps the row baselines.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>

#include "common/result.h"
#include "diagnosis/baseline.h"
#include "tracedb/histogram.h"

namespace causeway {

// One (process, op)'s calls over some seconds of rollups.
struct OpRollup {
  uint64_t count = 0;
  uint64_t min_ns = UINT64_MAX, max_ns = 0;
  LatencyHistogram hist;
  void merge(const OpRollup& o);
};

// The robust baseline of a histogram: median, MAD and p99 at bucket midpoints (within 0.4%,
// tracedb/histogram.h), clamped to the exact extremes; the median and the MAD are taken at the
// rank robust_baseline() takes them at (n / 2 + 1 of n).
Baseline histogram_baseline(const LatencyHistogram& hist, uint64_t min_ns, uint64_t max_ns);

// The fast-counted ops' rollups of the seconds the correlator is at, read once a second each
// (the rollups of a second are complete before the correlator reaches it: the live correlator
// never goes past sessions.rolled_up_to_ns).
class RollupSeconds {
 public:
  using OnNewSecond = std::function<void(uint64_t op_key, const OpRollup&)>;
  // Reads the seconds of [from_sec, to_sec) not read yet; `on_new` sees each newly read
  // (process, op) second once, so per-op totals can be summed from it without double counting.
  Result<void> read(sqlite3* db, int64_t session_id, int64_t from_sec, int64_t to_sec, const OnNewSecond& on_new);
  // The baselines, per (process, op) key (diagnosis/event_row.h op_key), over the seconds held
  // in [from_sec, to_sec).
  std::unordered_map<uint64_t, Baseline> baselines(int64_t from_sec, int64_t to_sec) const;
  // Drops the seconds before `sec`: the correlator never goes back.
  void forget_before(int64_t sec);

 private:
  std::map<int64_t, std::unordered_map<uint64_t, OpRollup>> secs_;
  int64_t read_to_sec_ = INT64_MIN;  // seconds before this were read (or are before the window)
};

}  // namespace causeway
