#include "metrics/exposition.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace causeway {
namespace {

// Shortest round-trip form of a double, printed the way Prometheus' own clients (Go's
// FormatFloat 'g', -1) print it — "1e-06", "2.5e-05", "0.00025", "10" — so le labels match
// what dashboards and recording rules expect.
std::string num(double v) {
  char buf[40];
  int digits = 17;
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    if (std::strtod(buf, nullptr) == v) {
      digits = p;
      break;
    }
  }
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 6) return buf;
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, digits - 1 - exp), v);
  return buf;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

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
  family(out, "causeway_calls_total", "counter", "Traced calls and host events, by source and op.");
  for (const auto& [k, v] : s.ops) out += "causeway_calls_total{" + op_labels(k) + "} " + std::to_string(v.calls) + "\n";
  family(out, "causeway_call_errors_total", "counter", "Traced calls that returned an error code, by source and op.");
  for (const auto& [k, v] : s.ops)
    out += "causeway_call_errors_total{" + op_labels(k) + "} " + std::to_string(v.errors) + "\n";
  family(out, "causeway_call_duration_seconds", "histogram", "Duration of traced calls, by source and op.");
  for (const auto& [k, v] : s.ops) {
    const std::string labels = op_labels(k);
    uint64_t cum = 0;
    for (size_t i = 0; i < v.buckets.size(); ++i) {
      cum += v.buckets[i];
      out += "causeway_call_duration_seconds_bucket{" + labels + ",le=\"" + num(kLatencyBucketsSeconds[i]) + "\"} " +
             std::to_string(cum) + "\n";
    }
    out += "causeway_call_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(cum + v.over) + "\n";
    out += "causeway_call_duration_seconds_sum{" + labels + "} " + num(static_cast<double>(v.sum_ns) * 1e-9) + "\n";
    // _count from the buckets, not the call counter: with lock-free observers the two can
    // differ by a call in flight, and the format requires +Inf == _count.
    out += "causeway_call_duration_seconds_count{" + labels + "} " + std::to_string(cum + v.over) + "\n";
  }
  family(out, "causeway_dropped_events_total", "counter", "Events lost by the pipeline, by reason (ring, writer, ...).");
  for (const auto& [reason, n] : s.drops)
    out += "causeway_dropped_events_total{reason=\"" + escape_label_value(reason) + "\"} " + std::to_string(n) + "\n";
  family(out, "causeway_writer_lost_events_total", "counter",
         "Events the trace DB's writer could not store (disk full, I/O error, DB deleted), by source and op.");
  for (const auto& [k, n] : s.writer_lost)
    out += "causeway_writer_lost_events_total{" + op_labels(k) + "} " + std::to_string(n) + "\n";
  family(out, "causeway_writer_failing", "gauge", "1 while the trace DB's writer cannot store events for this reason.");
  for (const auto& [fault, v] : s.writer_failing)
    out += "causeway_writer_failing{fault=\"" + escape_label_value(fault) + "\"} " + std::to_string(v) + "\n";
  family(out, "causeway_chains", "gauge", "Causal chains diagnosed in this trace, by cause.");
  for (const auto& [cause, n] : s.chains)
    out += "causeway_chains{cause=\"" + escape_label_value(cause) + "\"} " + std::to_string(n) + "\n";
  family(out, "causeway_host_info", "gauge", "The host this trace runs on (1): join on instance to name a series' host.");
  if (!s.host.empty())
    out += "causeway_host_info{host=\"" + escape_label_value(s.host) + "\",boot_id=\"" + escape_label_value(s.boot_id) +
           "\"} 1\n";
  family(out, "causeway_metrics_scrapes_total", "counter", "Scrapes of this endpoint, this one included.");
  out += "causeway_metrics_scrapes_total " + std::to_string(s.scrapes) + "\n";
  return out;
}

}  // namespace causeway
