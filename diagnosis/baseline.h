// Robust per-(process, op) baseline: median and MAD, and the outlier rule the correlator uses.
//
// Median/MAD rather than mean/stddev because the slow calls we look for are themselves in
// the sample: with up to ~40% of calls stretched by an incident the median and MAD still
// describe the healthy calls. A call is an outlier when it is at least 2x the median, more
// than 6 robust sigmas (1.4826 x MAD) above it, and at least 100 µs longer than it — the
// last floor keeps µs-scale jitter of launches out of chains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "diagnosis/event_row.h"

namespace causeway {

struct Baseline {
  size_t n = 0;
  int64_t median_ns = 0;
  int64_t mad_ns = 0;   // median absolute deviation
  int64_t p99_ns = 0;
  bool usable() const { return n >= kMinSamples; }
  static constexpr size_t kMinSamples = 8;
};

struct OutlierRule {
  double min_ratio = 2.0;        // dur >= ratio x median
  double min_sigmas = 6.0;       // dur >= median + sigmas x 1.4826 x MAD
  int64_t min_excess_ns = 100'000;
};

// Reorders `durations` (nth_element); O(n).
Baseline robust_baseline(std::vector<int64_t>& durations);

// The smallest duration that counts as an outlier (INT64_MAX when the baseline is unusable).
int64_t outlier_threshold(const Baseline& b, const OutlierRule& rule = {});

// The baselines of a chunk: per (process, op), from the chunk's traced calls in [from, to) of
// the ts-sorted `events` plus the history of earlier chunks in `history`, which then keeps the
// most recent calls of this one's keys (a count per key rather than a time span, so chunks
// shortened by a high event rate still give rare ops enough samples).
std::unordered_map<uint64_t, Baseline> chunk_baselines(const std::vector<Ev>& events, int64_t from, int64_t to,
                                                       std::unordered_map<uint64_t, std::vector<int64_t>>& history);

inline bool is_outlier(const Baseline& b, int64_t dur_ns, const OutlierRule& rule = {}) {
  return dur_ns >= outlier_threshold(b, rule);
}

}  // namespace causeway
