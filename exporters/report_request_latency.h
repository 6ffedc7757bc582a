// The requests section's picture (docs/REPORT.md "Inference requests"): one latency histogram
// per metric (TTFT and E2E per request, ITL per token gap) on a shared log axis in ms, the
// tail of the metric `requests` analysed coloured by each cause's share of the tail's time, the
// rest of that tail "unexplained"; p50, p90, p99 and max marked, their labels laid out so that
// none covers another. Without per-request values (a source that has only the percentiles) a
// metric is drawn as its p50 → p99 range with the tail band, as before.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace causeway {

// The shown window's latencies in ms: one TTFT and one E2E per request, one ITL per token gap.
struct RequestSamples {
  std::vector<double> ttft_ms, itl_ms, e2e_ms;
};

// "0.42 ms", "12.3 ms", "1.20 s"; "–" for a missing value.
std::string latency_ms_text(double v);

// `r` is the `requests` object of `requests --json` (percentiles, tail). A <figure>.
std::string render_request_latency(const nlohmann::json& r, const RequestSamples& samples);

// Where each label goes: the row (0 = nearest the plot) and whether it is anchored at its end
// (near the right edge). Labels are (x, character count) on a picture `width` wide; a label
// takes the first row where its box clears every other label's by a gap. Exposed for tests.
struct LabelSlot {
  int row = 0;
  bool end_anchor = false;
  double x0 = 0, x1 = 0;  // the estimated box
};
std::vector<LabelSlot> place_labels(const std::vector<std::pair<double, size_t>>& labels, double width);

}  // namespace causeway
