#include "metrics/request_exposition.h"

#include "metrics/exposition.h"
#include "metrics/exposition_format.h"
#include "metrics/genai_semconv.h"

namespace causeway {
namespace {

// The labels of a series, in the names OpenTelemetry's Prometheus exporter gives the
// conventions' attributes (gen_ai.operation.name -> gen_ai_operation_name, ...).
std::string request_label_text(const RequestLabels& l, const std::string& error_type = "") {
  std::string out = "server=\"" + escape_label_value(l.server) + "\",comm=\"" + escape_label_value(l.comm) +
                    "\",gen_ai_operation_name=\"" + escape_label_value(l.operation) + "\",path=\"" +
                    escape_label_value(l.path) + "\",tenant=\"" + escape_label_value(l.tenant) + "\"";
  if (!l.model.empty()) out += ",gen_ai_request_model=\"" + escape_label_value(l.model) + "\"";
  if (!error_type.empty()) out += ",error_type=\"" + escape_label_value(error_type) + "\"";
  return out;
}

template <size_t N>
void render_request_histogram(std::string& out, const char* name, const std::array<double, N>& bounds,
                              const std::string& labels, const RequestHistogram& h) {
  if (h.count == 0) return;
  uint64_t cum = 0;
  for (size_t i = 0; i < N; ++i) {
    cum += h.buckets[i];
    out += std::string(name) + "_bucket{" + labels + ",le=\"" + prom_format::number(bounds[i]) + "\"} " +
           std::to_string(cum) + "\n";
  }
  out += std::string(name) + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
  out += std::string(name) + "_sum{" + labels + "} " + prom_format::number(static_cast<double>(h.sum_ns) * 1e-9) + "\n";
  out += std::string(name) + "_count{" + labels + "} " + std::to_string(h.count) + "\n";
}

void render_request_counter(std::string& out, const char* name, const std::string& labels, uint64_t n) {
  out += std::string(name) + "{" + labels + "} " + std::to_string(n) + "\n";
}

}  // namespace

void render_request_families(std::string& out, const RequestFamiliesSnapshot& s) {
  using prom_format::family_header;
  family_header(out, genai::kTtftName, "histogram",
                "Time to first token of successful responses, from the request's last byte to the write of the first "
                "streamed event (OpenTelemetry gen_ai.server.time_to_first_token, measured from the kernel side).");
  for (const auto& [l, v] : s.series) render_request_histogram(out, genai::kTtftName, genai::kTtftBuckets, request_label_text(l), v.ttft);
  family_header(out, genai::kTpotName, "histogram",
                "Time per output token after the first, per successful response (OpenTelemetry "
                "gen_ai.server.time_per_output_token; docs/METRICS.md says how tokens are counted).");
  for (const auto& [l, v] : s.series) render_request_histogram(out, genai::kTpotName, genai::kTpotBuckets, request_label_text(l), v.tpot);
  family_header(out, genai::kDurationName, "histogram",
                "Request duration, first byte of the request to last byte of the response (OpenTelemetry "
                "gen_ai.server.request.duration); error_type on failed, disconnected and aborted requests.");
  for (const auto& [l, v] : s.series)
    for (const auto& [error_type, h] : v.duration)
      render_request_histogram(out, genai::kDurationName, genai::kDurationBuckets, request_label_text(l, error_type), h);
  family_header(out, genai::kRequestsName, "counter", "HTTP requests served by the traced servers.");
  for (const auto& [l, v] : s.series) render_request_counter(out, genai::kRequestsName, request_label_text(l), v.requests);
  family_header(out, genai::kErrorsName, "counter", "Requests answered with a status >= 400 (error_type: the status).");
  for (const auto& [l, v] : s.series)
    for (const auto& [error_type, n] : v.errors) render_request_counter(out, genai::kErrorsName, request_label_text(l, error_type), n);
  family_header(out, genai::kAbortsName, "counter",
                "Requests that got no response head: the connection closed (or the trace ended) first.");
  for (const auto& [l, v] : s.series) render_request_counter(out, genai::kAbortsName, request_label_text(l), v.aborts);
  family_header(out, genai::kDisconnectsName, "counter",
                "Requests whose response began but was never completed: the client went away mid-response.");
  for (const auto& [l, v] : s.series) render_request_counter(out, genai::kDisconnectsName, request_label_text(l), v.disconnects);
  family_header(out, genai::kTimeLostName, "counter",
                "Time above the median in the tail (p99) of TTFT or of the token gaps, claimed per cause "
                "(unexplained: claimed by none), over the session; updated by each pass of the request causes.");
  for (const auto& [k, seconds] : s.time_lost)
    out += std::string(genai::kTimeLostName) + "{metric=\"" + escape_label_value(k.first) + "\",cause=\"" +
           escape_label_value(k.second) + "\"} " + prom_format::number(seconds) + "\n";
  family_header(out, "causeway_request_label_overflow_total", "counter",
                "Requests whose traced label value (path, tenant, model, server, or the label set) was past its cap "
                "and published as \"other\".");
  for (const auto& [label, n] : s.label_overflow)
    out += "causeway_request_label_overflow_total{label=\"" + escape_label_value(label) + "\"} " + std::to_string(n) + "\n";
}

}  // namespace causeway
