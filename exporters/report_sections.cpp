#include "exporters/report_sections.h"

#include <algorithm>
#include <map>
#include <optional>

#include "diagnosis/chain_text.h"
#include "common/argmax.h"
#include "common/units.h"
#include "exporters/report_html.h"

namespace causeway {
namespace {

using json = nlohmann::json;

std::string text_of(const json& j, const char* key, size_t max = 600) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? html_text(j[key].get<std::string>(), max) : std::string();
}

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string dd(const std::string& term, const std::string& html) { return "<dt>" + term + "</dt><dd>" + html + "</dd>"; }

std::string gpus_html(const json& systems) {
  std::string out;
  if (!systems.is_array()) return out;
  for (const auto& sys : systems) {
    if (!sys.is_object()) continue;
    const std::string host = text_of(sys, "hostname", 80);
    const size_t n = sys.contains("gpus") && sys["gpus"].is_array() ? sys["gpus"].size() : 0;
    std::map<std::string, int> models;
    if (n)
      for (const auto& g : sys["gpus"]) {
        std::string name = text_of(g, "name", 80);
        if (g.contains("memory_mb") && g["memory_mb"].is_number_integer())
          name += " " + std::to_string(g["memory_mb"].get<int64_t>() / 1024) + " GiB";
        ++models[name.empty() ? "GPU" : name];
      }
    std::string line = (host.empty() ? "" : host + ": ") + (n ? "" : "no GPU recorded");
    bool first = true;
    for (auto& [m, c] : models) {
      line += std::string(first ? "" : ", ") + std::to_string(c) + " × " + m;
      first = false;
    }
    const std::string driver = text_of(sys, "driver", 60);
    if (!driver.empty()) line += " (driver " + driver + ")";
    out += (out.empty() ? "" : "<br>") + line;
  }
  return out;
}

}  // namespace

std::string render_header(const SessionHeader& h, const StatsResult& s, size_t chains) {
  std::string out = "<header><h1>causeway report</h1><dl class=\"meta\">";
  out += dd(h.store.empty() ? "Host" : "Hosts", html_escape(h.system_line));
  out += dd("GPUs", gpus_html(h.systems));
  if (h.store.empty())
    out += dd("Session", std::to_string(h.session_id) + " (" + html_escape(h.source_kind) +
                             (h.label.empty() ? "" : ": " + html_text(h.label, 120)) + ")");
  else
    out += dd("Fleet store", html_text(h.store, 200) + " (" + std::to_string(h.host_sessions) + " host session" +
                                 (h.host_sessions == 1 ? "" : "s") + ")");
  out += dd("Window", html_escape(format_utc(h.from_ns)) + " → " + html_escape(format_utc(h.to_ns)) + " (" +
                          html_escape(format_duration_ns(h.to_ns - h.from_ns)) + ")" +
                          (h.pid ? ", process " + std::to_string(*h.pid) + (h.store.empty() ? "" : " on any host") + " only" : ""));
  // What was traced: calls per source, then the host event counts.
  std::map<std::string, std::pair<size_t, uint64_t>> by_source;  // ops, calls
  for (const OpStats& o : s.ops) {
    auto& [ops, calls] = by_source[o.source];
    ++ops;
    calls += o.count;
  }
  std::string traced;
  for (auto& [src, v] : by_source)
    traced += (traced.empty() ? "" : "; ") + html_escape(src) + ": " + with_commas(v.second) + " calls of " +
              std::to_string(v.first) + " op" + (v.first == 1 ? "" : "s");
  std::string host;
  for (const HostCount& c : s.host)
    host += (host.empty() ? "" : ", ") + with_commas(c.count) + " " + html_text(c.event, 40);
  out += dd("Traced", (traced.empty() ? "no calls" : traced) + (host.empty() ? "" : "<br>host events: " + host));
  out += dd("Drops", s.dropped_ring + s.dropped_writer == 0
                         ? std::string("none: every event the probes saw is in the trace")
                         : with_commas(s.dropped_ring) + " lost in the ring buffer, " + with_commas(s.dropped_writer) +
                               " by the writer — counts and percentiles undercount by that much");
  out += dd("Findings", std::to_string(chains) + " causal chain" + (chains == 1 ? "" : "s") + ", most severe first");
  out += "</dl></header>";
  return out;
}

std::string render_chain_section(size_t n, const json& c, const std::string& lanes_html) {
  const std::string sev = text_of(c, "severity", 8);
  const std::string cause = text_of(c, "cause", 40);
  std::string out = "<section class=\"chain sev-" + sev + "\" id=\"chain-" + std::to_string(n) + "\" data-cause=\"" + cause + "\">";
  out += "<h3><span class=\"sev " + sev + "\">" + sev + "</span>" + std::to_string(n) + ". " + cause + ": " + text_of(c, "op", 80);
  if (c.contains("victims") && c["victims"].is_array() && !c["victims"].empty())
    out += " on " + std::to_string(c["victims"].size()) + " waiting rank" + (c["victims"].size() == 1 ? "" : "s");
  else
    out += " in " + text_of(c, "comm", 64) +
           (c.contains("pid") && c["pid"].is_number_integer() ? " (pid " + std::to_string(c["pid"].get<int64_t>()) + ")" : "");
  if (!text_of(c, "host", 128).empty()) out += " <span class=\"note\">(host " + text_of(c, "host", 128) + ")</span>";
  out += "</h3><p class=\"summary\">" + text_of(c, "summary", 1000) + "</p><dl class=\"kv\">";
  if (c.contains("culprit") && c["culprit"].is_object())
    out += dd("Culprit", "<span class=\"culprit\">" + html_escape(culprit_line(c["culprit"], is_request_chain(c))) + "</span>" +
                             // The fleet's chains say which host the culprit ran on.
                             (text_of(c["culprit"], "host", 128).empty() ? ""
                                                                       : " on host <b class=\"host\">" + text_of(c["culprit"], "host", 128) + "</b>"));
  // A request chain names the requests it slowed (the clients' x-request-id: untrusted).
  if (c.contains("requests") && c["requests"].is_array() && !c["requests"].empty()) {
    std::string ids;
    size_t shown = 0;
    for (const auto& id : c["requests"])
      if (id.is_string() && shown++ < 12) ids += (ids.empty() ? "" : ", ") + std::string("<span class=\"mono\">") + html_text(id.get<std::string>(), 64) + "</span>";
    if (c["requests"].size() > 12) ids += ", … " + std::to_string(c["requests"].size() - 12) + " more";
    out += dd("Requests", std::to_string(c["requests"].size()) + " slowed: " + ids +
                              (c.contains("share_time") && c["share_time"].is_number()
                                   ? " (" + percent_text(c["share_time"].get<double>()) + " of the " + text_of(c, "metric", 8) +
                                         " tail's time above the median)"
                                   : ""));
  }
  if (c.contains("calls") && c["calls"].is_number())
    out += dd("Calls", std::to_string(c["calls"].get<int64_t>()) + " slow" +
                           (c.contains("slow_share") && c["slow_share"].is_number()
                                ? " (" + percent_text(c["slow_share"].get<double>()) + " of the op's calls)"
                                : "") +
                           (c.contains("p50_us") && c["p50_us"].is_number()
                                ? "; op p50 " + format_duration_ns(static_cast<int64_t>(c["p50_us"].get<double>() * 1000)) +
                                      ", p99 " + format_duration_ns(static_cast<int64_t>(c.value("p99_us", 0.0) * 1000))
                                : "") +
                           (c.contains("lost_us") && c["lost_us"].is_number()
                                ? "; " + format_duration_ns(c["lost_us"].get<int64_t>() * 1000) + " lost"
                                : ""));
  if (c.contains("stack") && c["stack"].is_array() && !c["stack"].empty() && c["stack"][0].is_string()) {
    std::string st = "<span class=\"mono\">" + html_text(c["stack"][0].get<std::string>(), 200) + "</span>";
    for (size_t i = 1; i < c["stack"].size() && i < 6; ++i)
      if (c["stack"][i].is_string()) st += "<br><span class=\"mono\">← " + html_text(c["stack"][i].get<std::string>(), 200) + "</span>";
    out += dd("Call site", st);
  }
  out += "</dl>";
  const std::string fix = text_of(c, "recommendation", 800);
  if (!fix.empty()) out += "<div class=\"fix\"><b>Fix:</b> " + fix + "</div>";
  out += lanes_html;
  if (c.contains("evidence") && c["evidence"].is_array() && !c["evidence"].empty()) {
    out += "<details open><summary>Evidence</summary><ul class=\"evidence\">";
    size_t shown = 0;
    for (const auto& e : c["evidence"])
      if (e.is_string() && shown++ < 10) out += "<li>" + html_text(e.get<std::string>(), 400) + "</li>";
    out += "</ul></details>";
  }
  if (c.contains("timeline") && c["timeline"].is_array() && !c["timeline"].empty()) {
    const auto& tl = c["timeline"];
    const int64_t t0 = tl[0].value("ts_ns", int64_t{0});
    out += "<details><summary>Timeline as text (from " + html_escape(format_utc(t0)) + ")</summary><table>";
    for (const auto& t : tl) {
      char rel[48];
      std::snprintf(rel, sizeof rel, "%+.3f ms", static_cast<double>(t.value("ts_ns", int64_t{0}) - t0) / 1e6);
      out += "<tr><td class=\"num mono\">" + std::string(rel) + "</td><td>" + text_of(t, "layer", 8) + "</td><td>" +
             text_of(t, "what", 300) + "</td></tr>";
    }
    out += "</table></details>";
  }
  return out + "</section>";
}

namespace {

// The straggler row: the host an nccl_straggler chain's culprit is on, else the most named.
void mark_straggler(std::vector<HostRow>& rows, std::optional<size_t> straggler) {
  if (!straggler) {
    const HostRow* most = argmax_by(rows, [](const HostRow& r) { return r.chains; }, [](const HostRow& r) { return r.chains > 0; });
    if (most) straggler = static_cast<size_t>(most - rows.data());
  }
  if (straggler && *straggler < rows.size()) rows[*straggler].straggler = true;
}

}  // namespace

std::vector<HostRow> merged_host_rows(const std::vector<HostSpan>& hosts, const StatsResult& stats, const json& chains) {
  // A merged host k owns pids from its pid_base on (docs/FLEET.md); host names need not differ.
  auto index_of = [&](int64_t pid) {
    std::optional<size_t> at;
    for (size_t i = 0; i < hosts.size(); ++i)
      if (hosts[i].pid_base <= pid && (!at || hosts[i].pid_base > hosts[*at].pid_base)) at = i;
    return at;
  };
  std::map<int64_t, json> by_base;
  if (stats.by_host.is_array())
    for (const auto& b : stats.by_host) by_base[b.value("pid_base", int64_t{0})] = b;
  std::vector<HostRow> rows;
  for (const HostSpan& h : hosts) {
    const json b = by_base.count(h.pid_base) ? by_base[h.pid_base] : json::object();
    rows.push_back({h.host, h.system, b.value("calls", uint64_t{0}),
                    static_cast<uint64_t>(b.value("total_us", 0.0) * 1000), 0, false});
  }
  std::optional<size_t> straggler;
  if (chains.is_array())
    for (const auto& c : chains) {
      if (!c.contains("culprit") || !c["culprit"].is_object() || !c["culprit"].contains("pid") ||
          !c["culprit"]["pid"].is_number_integer())
        continue;
      auto i = index_of(c["culprit"]["pid"].get<int64_t>());
      if (!i) continue;
      ++rows[*i].chains;
      if (!straggler && c.value("cause", "") == "nccl_straggler") straggler = i;
    }
  mark_straggler(rows, straggler);
  return rows;
}

std::vector<HostRow> fleet_host_rows(const json& hosts, const StatsResult& stats, const std::vector<std::string>& op_hosts,
                                     const json& chains) {
  std::vector<HostRow> rows;
  std::map<std::string, size_t> at;
  if (hosts.is_array())
    for (const auto& h : hosts) {
      const std::string name = h.value("host", "");
      if (at.count(name)) continue;  // a host shipped several sessions: one row
      at[name] = rows.size();
      rows.push_back({name, h.value("system", json::object()), 0, 0, 0, false});
    }
  for (size_t i = 0; i < stats.ops.size() && i < op_hosts.size(); ++i)
    if (auto it = at.find(op_hosts[i]); it != at.end()) {
      rows[it->second].calls += stats.ops[i].count;
      rows[it->second].total_ns += stats.ops[i].total_ns;
    }
  std::optional<size_t> straggler;
  if (chains.is_array())
    for (const auto& c : chains) {
      if (!c.contains("culprit") || !c["culprit"].is_object() || !c["culprit"].contains("host") ||
          !c["culprit"]["host"].is_string())
        continue;
      auto it = at.find(c["culprit"]["host"].get<std::string>());
      if (it == at.end()) continue;
      ++rows[it->second].chains;
      if (!straggler && c.value("cause", "") == "nccl_straggler") straggler = it->second;
    }
  mark_straggler(rows, straggler);
  return rows;
}

std::string render_hosts_section(const std::vector<HostRow>& rows) {
  std::string out = "<section class=\"hosts\" id=\"hosts\"><h2>Hosts</h2><table><tr><th>host</th><th>system</th>"
                    "<th class=\"num\">calls</th><th class=\"num\">call time</th><th class=\"num\">chains naming it</th><th></th></tr>";
  for (const HostRow& h : rows) {
    const std::string sys = text_of(h.system, "kernel", 60);
    const size_t gpus = h.system.is_object() && h.system.contains("gpus") && h.system["gpus"].is_array() ? h.system["gpus"].size() : 0;
    out += std::string("<tr") + (h.straggler ? " class=\"straggler\"" : "") + "><td>" + html_text(h.name, 80) + "</td><td>" +
           (sys.empty() ? "" : "kernel " + sys + ", ") + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") +
           "</td><td class=\"num\">" + with_commas(h.calls) + "</td><td class=\"num\">" +
           html_escape(format_duration_ns(static_cast<int64_t>(h.total_ns))) + "</td><td class=\"num\">" +
           std::to_string(h.chains) + "</td><td>" + (h.straggler ? "straggler" : "") + "</td></tr>";
  }
  return out + "</table></section>";
}

}  // namespace causeway
