#include "exporters/report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "diagnosis/chains.h"
#include "diagnosis/session_scope.h"
#include "diagnosis/stats.h"
#include "diagnosis/system_info.h"
#include "diagnosis/tail_breakdown.h"
#include "common/sanitize.h"
#include "common/user_output.h"
#include "exporters/report_histogram.h"
#include "exporters/report_html.h"
#include "exporters/report_lanes.h"
#include "exporters/report_sections.h"
#include "exporters/report_swimlanes.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

using json = nlohmann::json;

// The call-level chains as `explain` orders them: severity, then the wall time each lost.
// Request-level chains are drawn in the requests section (exporters/report_requests.h).
Result<json> ranked_chains(sqlite3* db, const ReportOptions& o, const SessionScope& sc) {
  ChainQuery q;
  q.since_ns = o.since_ns;
  q.pid = o.pid;
  q.session_id = sc.session_id;
  q.limit = std::max<size_t>(o.max_chains, 500);
  auto r = load_chains(db, q);
  if (!r) return r.error();
  json chains = json::array();
  for (auto& c : (*r)["chains"])
    if (c.value("level", "") != "request") chains.push_back(std::move(c));
  rank_chains(chains);
  return chains;
}

SessionHeader header_of(sqlite3* db, const SessionScope& sc, const ReportOptions& o) {
  SessionHeader h;
  h.session_id = sc.session_id;
  h.from_ns = sc.from_ns;
  h.to_ns = sc.to_ns;
  h.pid = o.pid;
  h.system_line = system_line(db, sc.session_id);
  // The header's row already says what the line is.
  if (h.system_line.rfind("System: ", 0) == 0) h.system_line.erase(0, 8);
  if (auto st = Statement::prepare(db, "SELECT source_kind, coalesce(label, '') FROM sessions WHERE id = ?1")) {
    st->bind(1, sc.session_id);
    if (st->step() == SQLITE_ROW) {
      h.source_kind = st->col_text(0);
      h.label = st->col_text(1);
    }
  }
  auto hosts = load_merged_hosts(db, sc.session_id);
  if (hosts && !hosts->empty()) {
    h.systems = json::array();
    for (const auto& s : *hosts) h.systems.push_back(s.system);
  } else if (auto sys = load_session_system(db, sc.session_id)) {
    h.systems = json::array({*sys});
  }
  return h;
}

Result<std::string> ops_section(sqlite3* db, const ReportOptions& o, const SessionScope& sc, const StatsResult& stats,
                                size_t& drawn) {
  TailQuery tq;
  tq.since_ns = o.since_ns;
  tq.pid = o.pid;
  tq.session_id = sc.session_id;
  tq.limit = 10'000;  // every (op, process) pair: the ones drawn are looked up below
  auto tail = tail_breakdown(db, tq);
  if (!tail) return tail.error();
  std::map<std::pair<std::string, uint32_t>, const TailOp*> tail_of;
  for (const TailOp& t : tail->ops) tail_of[{t.op, t.pid}] = &t;
  std::string out = "<section class=\"ops\" id=\"ops\"><h2>Latency per op</h2><p class=\"note\">Every call in the window "
                    "(rollup histograms), bins log-spaced, heights on a log scale. The tail (slowest " +
                    std::to_string(static_cast<int>(std::lround((1 - tq.quantile) * 100))) +
                    "%) is coloured by the cause the correlator found for each call; grey-blue is a tail call no cause "
                    "explains.</p><div class=\"opgrid\">";
  for (const OpStats& op : stats.ops) {
    if (drawn >= o.max_ops) break;
    if (op.count == 0) continue;
    auto it = tail_of.find({op.op, op.pid});
    auto h = build_op_histogram(db, sc.session_id, tail->from_ns, tail->to_ns, op, it == tail_of.end() ? nullptr : it->second);
    if (!h) return h.error();
    out += render_op_histogram(*h);
    ++drawn;
  }
  out += "</div>";
  if (stats.ops.size() > drawn)
    out += "<p class=\"note\">" + std::to_string(stats.ops.size() - drawn) +
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

Result<ReportSummary> write_report(const ReportOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  auto db = open_read_only(o.db_path);
  if (!db) return db.error();
  auto sc = resolve_scope(db->get(), o.session_id, o.since_ns);
  if (!sc) return sc.error();
  ReportSummary sum;
  sum.session_id = sc->session_id;

  StatsQuery sq;
  sq.since_ns = o.since_ns;
  sq.pid = o.pid;
  sq.session_id = sc->session_id;
  auto stats = compute_stats(db->get(), sq);
  if (!stats) return stats.error();
  auto chains = ranked_chains(db->get(), o, *sc);
  if (!chains) return chains.error();
  const size_t total_chains = chains->size();

  const SessionHeader header = header_of(db->get(), *sc, o);
  std::string body = render_header(header, *stats, total_chains);
  body += "<nav class=\"note\">";
  body += "<a href=\"#chains\">Causal chains</a> · <a href=\"#ops\">Latency per op</a>";

  std::string hosts_html;
  auto hosts = load_merged_hosts(db->get(), sc->session_id);
  if (!hosts) return hosts.error();
  if (!hosts->empty()) {
    hosts_html = render_hosts_section(*hosts, *stats, *chains);
    sum.hosts = hosts->size();
    body += " · <a href=\"#hosts\">Hosts</a>";
  }
  std::string requests_html;
  if (o.requests) {
    RequestsScope rs{sc->session_id, o.since_ns, o.pid};
    auto doc = o.requests(db->get(), rs);
    if (!doc) return doc.error();
    if (*doc) {
      requests_html = render_requests_section(**doc);
      sum.requests = true;
      body += " · <a href=\"#requests\">Inference requests</a>";
    }
  }
  body += "</nav>";
  body += hosts_html;

  body += "<section id=\"chains\"><h2>Causal chains</h2>";
  if (chains->empty())
    body += "<p>No causal chain: nothing slow enough to matter was found with a cause in this window.</p>";
  size_t n = 0;
  for (const json& c : *chains) {
    if (n >= o.max_chains) break;
    auto lanes = load_swimlanes(db->get(), sc->session_id, c);
    if (!lanes) return lanes.error();
    std::string lanes_html;
    if (*lanes && !(*lanes)->lanes.empty()) {
      lanes_html = render_swimlanes(**lanes);
      ++sum.swimlanes;
    }
    body += render_chain_section(++n, c, lanes_html);
  }
  if (total_chains > n)
    body += "<p class=\"note\">" + std::to_string(total_chains - n) +
            " less severe chains not drawn: <code>causeway explain --limit N</code> lists them.</p>";
  body += "</section>";
  sum.chains = n;

  body += requests_html;
  auto ops = ops_section(db->get(), o, *sc, *stats, sum.histograms);
  if (!ops) return ops.error();
  body += *ops;
  body += "<footer>Written by causeway " CAUSEWAY_VERSION " from session " + std::to_string(sc->session_id) +
          ". Everything is in this file; it needs no network.</footer>";

  std::string title = "causeway report — " + header.system_line;
  auto bytes = write_out(o.out_path, html_page(title, body));
  if (!bytes) return bytes.error();
  sum.bytes = *bytes;
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

}  // namespace causeway
