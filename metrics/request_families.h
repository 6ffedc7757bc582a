// The request families of /metrics (docs/METRICS.md "Requests"): the OpenTelemetry GenAI
// server histograms (metrics/genai_semconv.h), request / error / abort / disconnect counters,
// and the tail's time lost per cause. Fed by the trace (collector/request_metrics_feed.h):
// one observe() per request as it is stored, set_time_lost() after each pass of the request
// causes. Thread-safe: the collector observes while the HTTP thread renders.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "metrics/label_cap.h"

namespace causeway {

// One request as /metrics needs it. Strings are raw traced bytes: observe() sanitizes and caps.
struct RequestFacts {
  uint32_t server_pid = 0;
  std::string comm, path, tenant;
  std::optional<std::string> model;  // gen_ai.request.model when the request named one
  int status = 0;
  std::string end_reason = "complete";  // requests.end_reason (docs/INFERENCE.md "Errors")
  std::optional<int64_t> tpot_ns;       // requests.tpot_ns, when the server's token count gave one
  std::optional<int64_t> ttft_ns, e2e_ns;
  int64_t decode_ns = 0;                     // first output token → last
  std::optional<uint64_t> output_tokens;
};

// The labels every request family carries (error_type is added where it applies).
struct RequestLabels {
  std::string server, comm, path, tenant, operation, model;  // model "" = not known: no label
  auto operator<=>(const RequestLabels&) const = default;
};

// A histogram's non-cumulative bucket counts (the last is +Inf), count and sum.
struct RequestHistogram {
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  int64_t sum_ns = 0;
};

struct RequestSeries {
  uint64_t requests = 0, aborts = 0, disconnects = 0;
  std::map<std::string, uint64_t> errors;  // error_type (the status code) -> requests
  RequestHistogram ttft, tpot;
  std::map<std::string, RequestHistogram> duration;  // error_type ("" = success) -> histogram
};

struct RequestFamiliesSnapshot {
  std::map<RequestLabels, RequestSeries> series;
  std::map<std::pair<std::string, std::string>, double> time_lost;  // (metric, cause) -> seconds
  std::map<std::string, uint64_t> label_overflow;                   // label -> requests folded into "other"
};

class RequestFamilies {
 public:
  // Caps (docs/METRICS.md "Cardinality"): distinct values per label, and label sets per
  // server; beyond them values read "other" and are counted in label_overflow.
  static constexpr size_t kMaxPaths = 64, kMaxTenants = 64, kMaxModels = 16, kMaxServers = 32;
  static constexpr size_t kMaxLabelSets = 1000;

  void observe(const RequestFacts& r);
  // The session's time above the median claimed by `cause` in `metric`'s tail (ttft or itl),
  // in seconds, as the latest pass of the request causes computed it. A counter never goes
  // back: a pass that claims less than an earlier one leaves the published value as it was.
  void set_time_lost(const std::string& metric, const std::string& cause, double seconds);

  RequestFamiliesSnapshot snapshot() const;

 private:
  RequestLabels labels_of(const RequestFacts& r);
  mutable std::mutex mu_;
  RequestFamiliesSnapshot s_;
  LabelCap paths_{kMaxPaths}, tenants_{kMaxTenants}, models_{kMaxModels}, servers_{kMaxServers};
  uint64_t label_sets_folded_ = 0;
};

}  // namespace causeway
