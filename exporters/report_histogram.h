// Per-op latency histograms for the report (docs/REPORT.md "Latency per op"): log-spaced bins
// summed from the op's rollup histogram (diagnosis/stats.h: every call in the window), p50 and
// p99 marked, and the bins of the tail (diagnosis/tail_breakdown.h's threshold) split by the
// cause the correlator gave each slow call (call_causes), the rest "unexplained".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "diagnosis/stats.h"
#include "diagnosis/tail_breakdown.h"
#include "common/result.h"

namespace causeway {

struct HistBin {
  uint64_t lo = 0, hi = 0;  // [lo, hi) ns
  uint64_t count = 0;
  std::map<std::string, uint64_t> causes;  // tail calls in the bin by cause
};

struct OpHistogram {
  std::string title;  // sanitized: "cudaStreamSynchronize — python3 (pid 4821)"
  std::string source;
  uint64_t calls = 0, min = 0, p50 = 0, p99 = 0, max = 0;
  uint64_t threshold = 0;            // tail floor; 0 = no tail breakdown for this op
  std::vector<TailCause> tail_causes;  // largest tail time first (from tail_breakdown)
  uint64_t tail_calls = 0;
  double tail_ns = 0, unexplained_ns = 0;
  std::vector<HistBin> bins;
};

// At most kMaxBins bins, whole powers of two split evenly in log space.
inline constexpr int kMaxBins = 48;

// A slow call the diagnosis claimed (call_causes, gap rows excluded): its cause colours its bin.
struct TailClaim {
  std::string cause;
  uint64_t dur_ns = 0;
};

// Claimed calls read per op: the tail is the slowest 1%, so a 10M-call op has 100k; past this
// the colours are drawn from the first ones read (the caption's shares stay exact: they come
// from the tail breakdown).
inline constexpr int64_t kMaxClaims = 500'000;

// `tail` may be null (ops outside CUDA/driver/NCCL have no tail breakdown); `claims` are the
// op's claimed calls at or above the tail's threshold; `host` ("" for one host) goes in the title.
OpHistogram build_op_histogram(const OpStats& op, const TailOp* tail, const std::vector<TailClaim>& claims,
                               const std::string& host = "");

// A <figure> with the SVG, its caption and the cause legend (HTML).
std::string render_op_histogram(const OpHistogram& h);

}  // namespace causeway
