// In-process metrics of a live trace: per-op call counters and latency histograms, drop
// counters by reason, chain counts by cause, and the request families (GenAI server
// metrics). Thread-safe: the drain thread observes calls while the HTTP thread renders.
// Rendering is in exposition.h.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <map>
#include <mutex>
#include <utility>
#include <vector>
#include <string>
#include <utility>

#include "metrics/request_families.h"

namespace causeway {

// Latency buckets (upper bounds, seconds) from 1 µs to 10 s, about 3 per decade: wide enough
// for a 2 µs cudaLaunchKernel and a 5 s NCCL hang, few enough to keep series per op cheap.
inline constexpr std::array<double, 22> kLatencyBucketsSeconds = {
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
    5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};

// The same bounds in whole nanoseconds, for binning: 1000 ns * 1e-9 is 1.0000000000000002e-06
// in doubles, so comparing seconds put a call of exactly 1 µs above le="1e-06".
inline constexpr std::array<int64_t, kLatencyBucketsSeconds.size()> kLatencyBucketsNs = [] {
  std::array<int64_t, kLatencyBucketsSeconds.size()> ns{};
  for (size_t i = 0; i < ns.size(); ++i) ns[i] = static_cast<int64_t>(kLatencyBucketsSeconds[i] * 1e9 + 0.5);
  return ns;
}();

struct OpSeries {
  uint64_t calls = 0;
  uint64_t errors = 0;
  uint64_t sum_ns = 0;
  std::array<uint64_t, kLatencyBucketsSeconds.size()> buckets{};  // non-cumulative counts per bucket
  uint64_t over = 0;  // above the last bound (only in +Inf)
};

struct MetricsSnapshot {
  std::map<std::pair<std::string, std::string>, OpSeries> ops;  // (source, op)
  std::map<std::string, uint64_t> drops;                          // reason -> events lost
  std::map<std::pair<std::string, std::string>, uint64_t> writer_lost;  // (source, op) -> rows the writer lost
  std::map<std::string, uint64_t> writer_failing;                 // fault -> 1 while it holds, else 0
  std::map<std::string, uint64_t> chains;                         // cause -> chains
  // The traced host (hostname, boot id): one causeway_host_info series, empty until set.
  std::string host, boot_id;
  RequestFamiliesSnapshot requests;  // the GenAI server metrics and request counters
  uint64_t scrapes = 0;
};

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // One traced call (or host event) of `source` (cuda, driver, nccl, …) and `op`. Takes a
  // lock and builds a key: fine for occasional events, not for the drain loop (see observe).
  void observe_call(const std::string& source, const std::string& op, int64_t dur_ns, bool error);

  // Hot path for the drain thread: no lock, no allocation after an op's first call (relaxed
  // atomics; a scrape may see a call in _count a moment before its bucket). Ops are named
  // once with name_op (e.g. from tracedb/op_catalog.h); unnamed ids render as op<N>.
  void name_op(uint16_t op_id, const std::string& source, const std::string& op);
  void observe(uint16_t op_id, int64_t dur_ns, bool error);
  // Calls counted in the kernel (collector/call_agg.h): `count` calls in all, `dur_counts`
  // (a duration in each histogram bucket, how many), their exact total duration and errors.
  void observe_counted(uint16_t op_id, const std::vector<std::pair<int64_t, uint64_t>>& dur_counts, uint64_t count,
                       uint64_t sum_ns, uint64_t errors);
  // Totals so far (the pipeline's counters are cumulative: last value wins).
  void set_drops(const std::string& reason, uint64_t n);
  void set_chains(const std::string& cause, uint64_t n);
  // The trace DB's writer: rows it could not store, by op, and which fault stops it now.
  void set_writer_lost(const std::string& source, const std::string& op, uint64_t n);
  void set_writer_failing(const std::string& fault, bool failing);
  // The host this trace runs on, published as causeway_host_info{host, boot_id} 1: one
  // series to join on, rather than a host label on every series (Prometheus' guidance for
  // exporters; a scrape of 127.0.0.1 on every host would otherwise not say which host).
  // Sanitized: a label value must be valid UTF-8 or Prometheus rejects the whole scrape.
  void set_host(const std::string& host, const std::string& boot_id);

  // The request families (metrics/request_families.h): fed per request and per pass of the
  // request causes (collector/request_metrics_feed.h).
  RequestFamilies& requests() { return requests_; }

  MetricsSnapshot snapshot() const;
  void count_scrape();

 private:
  struct AtomicSeries;
  // The op's series, made on its first call (lock-free).
  AtomicSeries* series_of(uint16_t op_id);
  mutable std::mutex mu_;
  MetricsSnapshot s_;
  std::map<uint16_t, std::pair<std::string, std::string>> names_;
  // One slot per op id, allocated on the op's first call: 64 Ki pointers = 512 KiB.
  std::unique_ptr<std::atomic<AtomicSeries*>[]> by_id_;
  RequestFamilies requests_;
};

}  // namespace causeway
