#include "exporters/report_requests.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "diagnosis/chain_text.h"
#include "exporters/report_html.h"
#include "exporters/report_svg.h"

namespace causeway {
namespace {

using json = nlohmann::json;

double num(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
}

std::string str(const json& j, const char* k, size_t max = 120) {
  return j.is_object() && j.contains(k) && j[k].is_string() ? html_text(j[k].get<std::string>(), max) : std::string();
}

std::string ms(double v) { return latency_ms_text(v); }

std::string count(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? std::to_string(j[k].get<int64_t>()) : std::string("–");
}

std::string culprit_cell(const json& c) {
  if (!c.is_object()) return "";
  // prefill_interference names requests, not a process.
  if (c.contains("requests") && c["requests"].is_array()) {
    std::string ids;
    size_t n = 0;
    for (const auto& id : c["requests"])
      if (id.is_string() && n++ < 3) ids += (ids.empty() ? "" : ", ") + html_text(id.get<std::string>(), 60);
    if (c["requests"].size() > 3) ids += ", …";
    return "long requests " + ids;
  }
  std::string s = html_escape(culprit_line(c, true));
  if (c.contains("kv_cache_usage") && c["kv_cache_usage"].is_number())
    s += " KV cache " + percent_text(c["kv_cache_usage"].get<double>());
  if (c.contains("preemptions") && c["preemptions"].is_number())
    s += ", " + std::to_string(c["preemptions"].get<int64_t>()) + " preemptions";
  if (c.contains("waiting_max") && c["waiting_max"].is_number())
    s += " up to " + std::to_string(c["waiting_max"].get<int64_t>()) + " waiting";
  return s;
}

std::string causes_cell(const json& causes) {
  std::string s;
  if (!causes.is_array()) return s;
  for (const auto& c : causes) {
    const std::string cause = c.contains("cause") && c["cause"].is_string() ? c["cause"].get<std::string>() : "?";
    s += std::string(s.empty() ? "" : "<br>") + "<i class=\"sw " + std::string(cause_class(cause)) + "\"></i> " +
         html_text(cause, 40) + (std::isfinite(num(c, "lost_ms")) ? " −" + ms(num(c, "lost_ms")) : "");
    std::string who = c.contains("culprit") ? culprit_cell(c["culprit"]) : "";
    if (!who.empty()) s += ": " + who;
  }
  return s;
}

}  // namespace

std::string render_requests_section(const json& doc, const RequestSamples& samples) {
  std::string out = "<section class=\"requests\" id=\"requests\"><h2>Inference requests</h2>";
  if (!doc.is_object() || !doc.contains("requests") || !doc["requests"].is_object())
    return out + "<p class=\"note\">The requests data has no <code>requests</code> object.</p></section>";
  const json& r = doc["requests"];
  out += "<p>" + count(r, "count") + " requests, " + count(r, "streamed") + " streamed, " + count(r, "errors") +
         " errors (status ≥ 400).</p>";
  out += render_request_latency(r, samples);
  if (r.contains("tail") && r["tail"].is_object()) {
    const json& t = r["tail"];
    out += "<h3>Tail: " + str(t, "metric", 8) + " ≥ p" + html_escape(std::to_string(static_cast<int>(std::lround(num(t, "quantile") * 100)))) +
           "</h3><table><tr><th>cause</th><th class=\"num\">share of tail time</th><th class=\"num\">requests</th><th>culprit</th></tr>";
    if (t.contains("causes") && t["causes"].is_array())
      for (const auto& c : t["causes"]) {
        const std::string cause = c.contains("cause") && c["cause"].is_string() ? c["cause"].get<std::string>() : "?";
        out += "<tr data-cause=\"" + html_text(cause, 40) + "\"><td><i class=\"sw " + std::string(cause_class(cause)) +
               "\"></i> " + html_text(cause, 40) + "</td><td class=\"num\">" +
               (std::isfinite(num(c, "share_time")) ? percent_text(num(c, "share_time")) : "–") + "</td><td class=\"num\">" +
               count(c, "requests") + "</td><td>" + (c.contains("culprit") ? culprit_cell(c["culprit"]) : "") + "</td></tr>";
      }
    out += "<tr><td>unexplained</td><td class=\"num\">" +
           (std::isfinite(num(t, "unexplained_share")) ? percent_text(num(t, "unexplained_share")) : "–") + "</td><td></td><td></td></tr></table>";
  }
  if (r.contains("by") && r["by"].is_array() && !r["by"].empty()) {
    out += "<h3>By server, path and tenant</h3><table><tr><th>server</th><th>path</th><th>tenant</th><th class=\"num\">requests</th>"
           "<th class=\"num\">TTFT p50</th><th class=\"num\">TTFT p99</th><th class=\"num\">ITL p99</th><th class=\"num\">E2E p99</th></tr>";
    size_t n = 0;
    for (const auto& b : r["by"]) {
      if (n++ >= 50) break;  // the JSON has them all; a page of rows is what a reader scans
      out += "<tr><td>" + str(b, "comm", 48) + " (pid " + count(b, "server_pid") + ")</td><td class=\"mono\">" + str(b, "path", 120) +
             "</td><td>" + str(b, "tenant", 80) + "</td><td class=\"num\">" + count(b, "count") + "</td><td class=\"num\">" +
             ms(num(b.value("ttft_ms", json::object()), "p50")) + "</td><td class=\"num\">" + ms(num(b.value("ttft_ms", json::object()), "p99")) +
             "</td><td class=\"num\">" + ms(num(b.value("itl_ms", json::object()), "p99")) + "</td><td class=\"num\">" +
             ms(num(b.value("e2e_ms", json::object()), "p99")) + "</td></tr>";
    }
    out += "</table>";
  }
  if (r.contains("slowest") && r["slowest"].is_array() && !r["slowest"].empty()) {
    out += "<h3>Slowest requests</h3><table class=\"slowest\"><tr><th>request</th><th>method, path</th><th>tenant</th>"
           "<th class=\"num\">TTFT</th><th class=\"num\">worst ITL</th><th class=\"num\">E2E</th><th class=\"num\">status</th><th>causes</th></tr>";
    for (const auto& s : r["slowest"])
      out += "<tr><td class=\"mono\">" + str(s, "request_id", 64) + "</td><td class=\"mono\">" + str(s, "method", 12) + " " +
             str(s, "path", 120) + "</td><td>" + str(s, "tenant", 80) + "</td><td class=\"num\">" + ms(num(s, "ttft_ms")) +
             "</td><td class=\"num\">" + ms(num(s, "itl_max_ms")) + "</td><td class=\"num\">" + ms(num(s, "e2e_ms")) +
             "</td><td class=\"num\">" + count(s, "status") + "</td><td>" + causes_cell(s.value("causes", json::array())) + "</td></tr>";
    out += "</table>";
  }
  if (doc.contains("engines") && doc["engines"].is_array() && !doc["engines"].empty()) {
    out += "<p class=\"note\">Engines: ";
    bool first = true;
    for (const auto& e : doc["engines"]) {
      out += std::string(first ? "" : "; ") + str(e, "engine", 20) + " (pid " + count(e, "pid") + ", " + count(e, "samples") + " metric samples)";
      first = false;
    }
    out += "</p>";
  }
  return out + "</section>";
}

}  // namespace causeway
