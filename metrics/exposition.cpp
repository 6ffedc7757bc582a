#include "metrics/exposition.h"

#include "metrics/exposition_format.h"
#include "metrics/request_exposition.h"

namespace causeway {
namespace {

std::string op_labels(const std::pair<std::string, std::string>& k) {
  return "source=\"" + escape_label_value(k.first) + "\",op=\"" + escape_label_value(k.second) + "\"";
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string render_prometheus(const MetricsSnapshot& s) {
  std::string out;
  prom_format::family_header(out, "causeway_calls_total", "counter", "Traced calls and host events, by source and op.");
  for (const auto& [k, v] : s.ops) out += "causeway_calls_total{" + op_labels(k) + "} " + std::to_string(v.calls) + "\n";
  prom_format::family_header(out, "causeway_call_errors_total", "counter", "Traced calls that returned an error code, by source and op.");
  for (const auto& [k, v] : s.ops)
    out += "causeway_call_errors_total{" + op_labels(k) + "} " + std::to_string(v.errors) + "\n";
  prom_format::family_header(out, "causeway_call_duration_seconds", "histogram", "Duration of traced calls, by source and op.");
  for (const auto& [k, v] : s.ops) {
    const std::string labels = op_labels(k);
    uint64_t cum = 0;
    for (size_t i = 0; i < v.buckets.size(); ++i) {
      cum += v.buckets[i];
      out += "causeway_call_duration_seconds_bucket{" + labels + ",le=\"" + prom_format::number(kLatencyBucketsSeconds[i]) + "\"} " +
             std::to_string(cum) + "\n";
    }
    out += "causeway_call_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(cum + v.over) + "\n";
    out += "causeway_call_duration_seconds_sum{" + labels + "} " + prom_format::number(static_cast<double>(v.sum_ns) * 1e-9) + "\n";
    // _count from the buckets, not the call counter: with lock-free observers the two can
    // differ by a call in flight, and the format requires +Inf == _count.
    out += "causeway_call_duration_seconds_count{" + labels + "} " + std::to_string(cum + v.over) + "\n";
  }
  prom_format::family_header(out, "causeway_dropped_events_total", "counter", "Events lost by the pipeline, by reason (ring, writer, ...).");
  for (const auto& [reason, n] : s.drops)
    out += "causeway_dropped_events_total{reason=\"" + escape_label_value(reason) + "\"} " + std::to_string(n) + "\n";
  prom_format::family_header(out, "causeway_writer_lost_events_total", "counter",
         "Events the trace DB's writer could not store (disk full, I/O error, DB deleted), by source and op.");
  for (const auto& [k, n] : s.writer_lost)
    out += "causeway_writer_lost_events_total{" + op_labels(k) + "} " + std::to_string(n) + "\n";
  prom_format::family_header(out, "causeway_writer_failing", "gauge", "1 while the trace DB's writer cannot store events for this reason.");
  for (const auto& [fault, v] : s.writer_failing)
    out += "causeway_writer_failing{fault=\"" + escape_label_value(fault) + "\"} " + std::to_string(v) + "\n";
  prom_format::family_header(out, "causeway_chains", "gauge", "Causal chains diagnosed in this trace, by cause.");
  for (const auto& [cause, n] : s.chains)
    out += "causeway_chains{cause=\"" + escape_label_value(cause) + "\"} " + std::to_string(n) + "\n";
  prom_format::family_header(out, "causeway_host_info", "gauge", "The host this trace runs on (1): join on instance to name a series' host.");
  if (!s.host.empty())
    out += "causeway_host_info{host=\"" + escape_label_value(s.host) + "\",boot_id=\"" + escape_label_value(s.boot_id) +
           "\"} 1\n";
  render_request_families(out, s.requests);
  prom_format::family_header(out, "causeway_metrics_scrapes_total", "counter", "Scrapes of this endpoint, this one included.");
  out += "causeway_metrics_scrapes_total " + std::to_string(s.scrapes) + "\n";
  return out;
}

}  // namespace causeway
