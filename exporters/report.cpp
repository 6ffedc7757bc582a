#include "exporters/report.h"

#include <chrono>
#include <cmath>
#include <iostream>

#include "common/user_output.h"
#include "exporters/report_html.h"
#include "exporters/report_lanes.h"
#include "exporters/report_sections.h"
#include "exporters/report_sqlite_source.h"
#include "exporters/report_swimlanes.h"

namespace causeway {
namespace {

using json = nlohmann::json;

std::string ops_section(const std::vector<OpHistogram>& hists, double quantile, size_t pairs) {
  std::string out = "<section class=\"ops\" id=\"ops\"><h2>Latency per op</h2><p class=\"note\">Every call in the window "
                    "(rollup histograms), bins log-spaced, heights on a log scale. The tail (slowest " +
                    std::to_string(static_cast<int>(std::lround((1 - quantile) * 100))) +
                    "%) is coloured by the cause the correlator found for each call; grey-blue is a tail call no cause "
                    "explains.</p><div class=\"opgrid\">";
  for (const OpHistogram& h : hists) out += render_op_histogram(h);
  out += "</div>";
  if (pairs > hists.size())
    out += "<p class=\"note\">" + std::to_string(pairs - hists.size()) +
           " more (op, process) pairs with less total time: <code>causeway stats</code> lists them all.</p>";
  return out + "</section>";
}

Result<uint64_t> write_out(const std::string& path, const std::string& html) {
  if (path == "-") {
    std::cout << html << std::flush;
    return static_cast<uint64_t>(html.size());
  }
  // Written beside the target and renamed (a reader never sees half a report), as the user
  // it is for under sudo.
  if (auto r = replace_user_file(path, html, 0644); !r) return r.error();
  return static_cast<uint64_t>(html.size());
}

}  // namespace

Result<ReportSummary> write_report(ReportSource& src, const ReportOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  ReportSummary sum;
  sum.origin = src.origin();
  auto stats = src.stats();
  if (!stats) return stats.error();
  auto chains = src.chains();
  if (!chains) return chains.error();
  const size_t total_chains = chains->size();

  auto header = src.header(*stats);
  if (!header) return header.error();
  std::string body = render_header(*header, *stats, total_chains);
  body += "<nav class=\"note\">";
  body += "<a href=\"#chains\">Causal chains</a> · <a href=\"#ops\">Latency per op</a>";

  std::string hosts_html;
  auto hosts = src.hosts(*stats, *chains);
  if (!hosts) return hosts.error();
  if (!hosts->empty()) {
    hosts_html = render_hosts_section(*hosts);
    sum.hosts = hosts->size();
    body += " · <a href=\"#hosts\">Hosts</a>";
  }
  std::string requests_html;
  auto doc = src.requests();
  if (!doc) return doc.error();
  if (*doc) {
    auto samples = src.request_samples();
    if (!samples) return samples.error();
    requests_html = render_requests_section(**doc, *samples);
    sum.requests = true;
    body += " · <a href=\"#requests\">Inference requests</a>";
  }
  body += "</nav>";
  body += hosts_html;

  body += "<section id=\"chains\"><h2>Causal chains</h2>";
  if (chains->empty())
    body += "<p>No causal chain: nothing slow enough to matter was found with a cause in this window.</p>";
  size_t n = 0;
  for (const json& c : *chains) {
    if (n >= o.max_chains) break;
    std::string lanes_html;
    auto lanes_src = src.lanes_for(c);
    if (!lanes_src) return lanes_src.error();
    if (*lanes_src) {
      auto lanes = load_swimlanes(**lanes_src, c);
      if (!lanes) return lanes.error();
      if (*lanes && !(*lanes)->lanes.empty()) {
        lanes_html = render_swimlanes(**lanes);
        ++sum.swimlanes;
      }
    }
    body += render_chain_section(++n, c, lanes_html);
  }
  if (total_chains > n)
    body += "<p class=\"note\">" + std::to_string(total_chains - n) +
            " less severe chains not drawn: <code>causeway explain --limit N</code> lists them.</p>";
  body += "</section>";
  sum.chains = n;

  body += requests_html;
  auto hists = src.histograms(*stats);
  if (!hists) return hists.error();
  sum.histograms = hists->size();
  body += ops_section(*hists, src.tail_quantile(), stats->ops.size());
  body += "<footer>Written by causeway " CAUSEWAY_VERSION " from " + html_escape(sum.origin) +
          ". Everything is in this file; it needs no network.</footer>";

  std::string title = "causeway report — " + header->system_line;
  auto bytes = write_out(o.out_path, html_page(title, body));
  if (!bytes) return bytes.error();
  sum.bytes = *bytes;
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

Result<ReportSummary> write_report(const ReportOptions& o) {
  SqliteReportOptions so;
  so.db_path = o.db_path;
  so.session_id = o.session_id;
  so.scope = {o.since_ns, o.pid, o.max_ops};
  so.requests = o.requests;
  auto src = open_sqlite_report_source(so);
  if (!src) return src.error();
  return write_report(**src, o);
}

}  // namespace causeway
