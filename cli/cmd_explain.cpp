// `causeway explain`: the incident report — root cause first, evidence, call site, fix —
// from the chains the correlator stored (diagnosis/chains.h reads them; MCP shares it).
#include <algorithm>
#include <iostream>
#include <sstream>

#include "diagnosis/chain_text.h"
#include "diagnosis/chains.h"
#include "diagnosis/system_info.h"
#include "diagnosis/tail_breakdown.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "fleet/fleet_explain.h"
#include "fleet/fleet_options.h"
#include "tracedb/open.h"
#include "tracedb/stale_read.h"
#include "tracedb/sqlite_handle.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_explain {

struct ExplainArgs {
  std::string db;
  std::string since;
  std::optional<uint32_t> pid;
  std::optional<int64_t> session;
  std::string severity;
  size_t limit = 10;
  bool json = false;
  bool tail = false;
  std::string op;
  double quantile = 0.99;
  fleet::FleetFlags fleet;
};

using json = nlohmann::json;

// Text from the DB is untrusted (a traced process chose its comm and frames).
std::string safe(const json& j, const char* key, size_t max = 600) {
  if (!j.contains(key) || !j[key].is_string()) return "";
  return sanitize_untrusted(j[key].get<std::string>(), max);
}

void render_chain(std::ostream& out, size_t n, const json& c) {
  out << n << ". [" << safe(c, "severity", 8) << "] " << safe(c, "cause", 40) << ": " << safe(c, "op", 80);
  if (c.contains("victims") && c["victims"].is_array() && !c["victims"].empty()) {
    std::string pids;
    for (const auto& v : c["victims"])
      if (v.contains("pid") && v["pid"].is_number()) pids += (pids.empty() ? "" : ", ") + std::to_string(v["pid"].get<int64_t>());
    out << " on " << c["victims"].size() << " waiting rank" << (c["victims"].size() == 1 ? "" : "s") << " (pid " << pids << ")";
  } else {
    out << " in " << safe(c, "comm", 64);
    if (c.contains("pid") && c["pid"].is_number()) out << " (pid " << c["pid"].get<int64_t>() << ")";
  }
  out << "\n   Root cause: " << safe(c, "summary", 1000) << "\n";
  if (c.contains("culprit")) out << "   Culprit:    " << culprit_line(c["culprit"], is_request_chain(c)) << "\n";
  if (c.contains("requests") && c["requests"].is_array() && !c["requests"].empty()) {
    // A request chain names the requests it slowed (ids are the clients' x-request-id: untrusted).
    out << "   Requests:   ";
    size_t shown = 0;
    for (const auto& id : c["requests"])
      if (id.is_string() && shown++ < 8) out << (shown > 1 ? ", " : "") << sanitize_untrusted(id.get<std::string>(), 64);
    if (c["requests"].size() > 8) out << ", … " << c["requests"].size() - 8 << " more in --json";
    out << "\n";
  }
  if (c.contains("evidence") && c["evidence"].is_array() && !c["evidence"].empty()) {
    out << "   Evidence:\n";
    size_t shown = 0;
    for (const auto& e : c["evidence"])
      if (e.is_string() && shown++ < 8) out << "     - " << sanitize_untrusted(e.get<std::string>(), 400) << "\n";
  }
  if (c.contains("timeline") && c["timeline"].is_array() && !c["timeline"].empty()) {
    const auto& tl = c["timeline"];
    int64_t t0 = tl[0].value("ts_ns", int64_t{0});
    out << "   Timeline (from " << format_utc(t0) << "):\n";
    size_t shown = 0;
    for (const auto& t : tl) {
      if (shown++ >= 10) {
        out << "     … " << tl.size() - 10 << " more in --json\n";
        break;
      }
      char rel[48];
      std::snprintf(rel, sizeof rel, "%+10.3f ms", static_cast<double>(t.value("ts_ns", int64_t{0}) - t0) / 1e6);
      out << "     " << rel << "  " << safe(t, "layer", 8) << "  " << safe(t, "what", 300) << "\n";
    }
  }
  if (c.contains("stack") && c["stack"].is_array() && !c["stack"].empty()) {
    const auto& st = c["stack"];
    // The chain's stack reads user frame first (diagnosis/frames.h): that is the call site.
    out << "   Call site:  " << sanitize_untrusted(st.front().is_string() ? st.front().get<std::string>() : "", 200) << "\n";
    for (size_t i = 1; i < st.size(); ++i)
      if (st[i].is_string()) out << "               <- " << sanitize_untrusted(st[i].get<std::string>(), 200) << "\n";
  }
  std::string fix = safe(c, "recommendation", 800);
  if (!fix.empty()) out << "   Fix:        " << fix << "\n";
}

// --tail: the slowest calls of each op, by cause (diagnosis/tail_breakdown.h).
int run_tail(const ExplainArgs& a) {
  TailQuery q;
  if (!a.since.empty()) {
    auto d = parse_duration_ns(a.since);
    if (!d) return report_error("explain", d.error(), a.json);
    q.since_ns = *d;
  }
  q.pid = a.pid;
  q.session_id = a.session;
  if (!a.op.empty()) q.op = a.op;
  q.quantile = a.quantile;
  q.limit = std::max<size_t>(1, a.limit);
  auto db = open_read_only(a.db);
  if (!db) return report_error("explain", db.error(), a.json);
  auto r = tail_breakdown(db->get(), q);
  if (!r) return report_error("explain", r.error(), a.json);
  if (a.json) {
    json doc = tail_to_json(*r);
    note_stale_read(doc, db->get());
    print_json(std::move(doc));
    return kExitOk;
  }
  std::cout << system_line(db->get(), r->session_id) << "\n"
            << "Session " << r->session_id << ", " << format_utc(r->from_ns) << " + " << format_duration_ns(r->to_ns - r->from_ns)
            << ": the slowest calls of each op, by cause.\n\n"
            << tail_to_text(*r);
  return kExitOk;
}

// --limit after ranking (diagnosis/chains.h rank_chains: root cause first).
void cut_chains(json& doc, size_t limit) {
  auto& chains = doc["chains"];
  if (chains.size() > limit) {
    chains.erase(chains.begin() + static_cast<std::ptrdiff_t>(limit), chains.end());
    doc["truncated"] = true;
  }
}

// Both, for the fleet's chains.
void rank_and_cut(json& doc, size_t limit) {
  rank_chains(doc["chains"]);
  cut_chains(doc, limit);
}

// --fleet: every host's chains and the cross-host stragglers, from the ClickHouse store.
int run_fleet(const ExplainArgs& a) {
  if (a.tail) return report_error("explain", make_error("usage", "--tail reads one host's DB; it does not take --fleet"), a.json);
  auto e = a.fleet.endpoint();
  if (!e) return report_error("explain", e.error(), a.json);
  fleet::FleetChainQuery q;
  if (!a.since.empty()) {
    auto d = parse_duration_ns(a.since);
    if (!d) return report_error("explain", d.error(), a.json);
    q.since_ns = *d;
  }
  q.pid = a.pid;
  if (!a.severity.empty()) {
    std::string s = a.severity;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    q.min_severity = s;
  }
  fleet::ClickHouse ch(*e);
  auto r = fleet::fleet_chains(ch, q);
  if (!r) return report_error("explain", r.error(), a.json);
  json& doc = *r;
  rank_and_cut(doc, std::max<size_t>(1, a.limit));
  if (a.json) {
    print_json(doc);
    return kExitOk;
  }
  std::ostringstream out;
  const int64_t from = doc["window"].value("from_ns", int64_t{0}), to = doc["window"].value("to_ns", int64_t{0});
  out << "Fleet store " << e->url << " (" << doc["hosts"].size() << " host session" << (doc["hosts"].size() == 1 ? "" : "s")
      << "), " << format_utc(from) << " + " << format_duration_ns(to - from) << ": " << doc.value("total", size_t{0})
      << " causal chain(s), most severe first.\n\n";
  size_t n = 0;
  for (const auto& c : doc["chains"]) {
    out << "Host " << safe(c, "host", 128) << ":\n";
    render_chain(out, ++n, c);
    out << "\n";
  }
  std::cout << out.str();
  return kExitOk;
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<ExplainArgs>();
  add_db_option(app, a->db);
  app.add_option("--since", a->since, "only chains in the last D of the session's data (500ms, 30s, 5m, 2h)");
  app.add_option("--pid", a->pid, "only chains where this process is the victim or the culprit");
  app.add_option("--session", a->session, "session id (default: the latest)");
  app.add_option("--severity", a->severity, "at least this severe: HIGH, MEDIUM or LOW");
  app.add_option("--limit", a->limit, "at most N chains (default 10)");
  app.add_flag("--json", a->json, "one JSON document on stdout: {\"chains\": [...]} (with --tail: {\"ops\": [...]})");
  app.add_flag("--tail", a->tail,
               "the tail of each op by cause instead of the chains: which causes explain its slowest calls (share of the "
               "tail's calls and time, the rest unexplained)");
  app.add_option("--op", a->op, "with --tail: only this op (exact name, e.g. cudaStreamSynchronize)");
  fleet::add_fleet_flags(app, a->fleet, "--fleet", "read the ClickHouse fleet store at this URL (every shipped host) instead of --db");
  app.add_option("--quantile", a->quantile, "with --tail: where the tail starts (default 0.99 = p99; 0.999 = p99.9)")
      ->check(CLI::Range(0.5, 0.999999));
  app.footer(
      "Chains are computed by the correlator during `causeway trace` and after `causeway demo` / `import`.\n"
      "Each names the cause (cpu_contention, io_contention, memory_pressure, network, nccl_straggler,\n"
      "gpu_wait, lock_contention, cold_start, allocator, transfer_bound, dataloader_starvation, host_bound,\n"
      "launch_bound, graph_recapture, unknown) and, when the data shows one, the culprit (with its cgroup and\n"
      "container). See docs/DIAGNOSIS.md.\n\n"
      "Examples:\n"
      "  causeway demo incident --db /tmp/d.db && causeway explain --db /tmp/d.db\n"
      "  causeway explain --since 10m --pid 4821\n"
      "  causeway explain --json --severity HIGH\n"
      "  causeway explain --tail --op cudaStreamSynchronize --quantile 0.999");
  return [a] {
    if (!a->fleet.url.empty()) return run_fleet(*a);
    if (a->tail) return run_tail(*a);
    ChainQuery q;
    if (!a->since.empty()) {
      auto d = parse_duration_ns(a->since);
      if (!d) return report_error("explain", d.error(), a->json);
      q.since_ns = *d;
    }
    q.pid = a->pid;
    q.session_id = a->session;
    // load_chains orders within a severity by calls x slow_share; fetch enough to re-rank by
    // impact (time lost) here before cutting to --limit.
    const size_t limit = std::max<size_t>(1, a->limit);
    q.limit = std::max<size_t>(limit, 500);
    if (!a->severity.empty()) {
      std::string s = a->severity;
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
      q.min_severity = s;
    }
    auto db = open_read_only(a->db);
    if (!db) return report_error("explain", db.error(), a->json);
    auto r = load_chains(db->get(), q);
    if (!r) return report_error("explain", r.error(), a->json);
    json& doc = *r;
    auto& chains = doc["chains"];
    // Request-level chains first when the session served requests (docs/INFERENCE.md
    // "Request chains"): what its users waited for, then the calls behind it.
    rank_chains(chains);
    cut_chains(doc, limit);
    if (a->json) {
      if (auto sys = load_session_system(db->get(), doc.value("session_id", int64_t{0}))) doc["system"] = *sys;
      note_stale_read(doc, db->get());
      print_json(doc);
      return kExitOk;
    }
    int64_t sid = doc.value("session_id", int64_t{0});
    std::string label;
    if (auto st = Statement::prepare(db->get(), "SELECT source_kind, coalesce(label, '') FROM sessions WHERE id = ?1")) {
      st->bind(1, sid);
      if (st->step() == SQLITE_ROW)
        label = sanitize_untrusted(st->col_text(0), 32) + (st->col_text(1).empty() ? "" : " \"" + sanitize_untrusted(st->col_text(1), 80) + "\"");
    }
    int64_t from = doc["window"].value("from_ns", int64_t{0}), to = doc["window"].value("to_ns", int64_t{0});
    std::ostringstream out;
    out << system_line(db->get(), sid) << "\n";
    out << "Session " << sid << (label.empty() ? "" : " (" + label + ")") << ", " << format_utc(from) << " + "
        << format_duration_ns(to - from) << ": ";
    if (chains.empty()) {
      out << "no causal chains"
          << (a->pid ? " involving pid " + std::to_string(*a->pid) : std::string())
          << (q.min_severity ? " at " + *q.min_severity + " or above" : std::string())
          << ". Nothing slow enough to matter was found with a cause, or the correlator has not run on this session "
             "yet (it runs during `causeway trace` and after `causeway demo` / `import`).\n";
      std::cout << out.str();
      return kExitOk;
    }
    size_t total = doc.value("total", chains.size());
    out << total << " causal chain" << (total == 1 ? "" : "s");
    if (doc.value("truncated", false)) out << " (showing " << chains.size() << "; --limit N for more)";
    out << ", most severe first.\n\n";
    size_t n = 0;
    for (const auto& c : chains) {
      render_chain(out, ++n, c);
      out << "\n";
    }
    std::cout << out.str();
    return kExitOk;
  };
}

const Registrar reg{{"explain", "why the GPU job was slow: causal chains that name the culprit", 45, setup}};

}  // namespace causeway::cli::cmd_explain
