// `causeway report`: the session as one self-contained HTML page (exporters/report.h,
// docs/REPORT.md) — open it in any browser, offline.
#include <cstdio>

#include "cli/command.h"
#include "common/units.h"
#include "exporters/report.h"
#include "fleet/fleet_options.h"
#include "fleet/fleet_report.h"
#include "diagnosis/request_latency.h"
#include "tracedb/sqlite_handle.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_report {

// The flags: those of the report itself bound to the options it is written with.
struct ReportArgs {
  ReportOptions o;  // --db, -o, --pid, --session, --chains, --ops (and --since, parsed into it)
  std::string since;
  bool quiet = false;
  fleet::FleetFlags fleet;
};

// The inference-requests section's data: `causeway requests --json`'s document for the
// session (diagnosis/request_latency.h, the same builder as the CLI and MCP), or nothing when the
// session served no requests (or its DB predates the requests table).
RequestsProvider requests_provider() {
  return [](sqlite3* db, const RequestsScope& scope) -> Result<std::optional<nlohmann::json>> {
    auto has_table = Statement::prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'requests'");
    if (!has_table) return has_table.error();
    if (has_table->step() != SQLITE_ROW) return std::optional<nlohmann::json>();
    requests::RequestQuery q;
    q.session_id = scope.session_id;
    q.since_ns = scope.since_ns;
    q.pid = scope.pid;
    auto doc = requests::request_latency_json(db, q);
    if (!doc) return doc.error();
    if ((*doc)["requests"].value("count", 0) == 0) return std::optional<nlohmann::json>();
    return std::optional<nlohmann::json>(std::move(*doc));
  };
}

// The fleet store's page (docs/FLEET.md "The report over the fleet"), as the fleet flags say.
Result<ReportSummary> fleet_report(const ReportArgs& a, const ReportOptions& o) {
  // --session names a session of one DB.
  if (a.o.session_id) return make_error("usage", "--session reads one DB; it does not take --fleet");
  auto e = a.fleet.endpoint();
  if (!e) return e.error();
  auto src = fleet::fleet_report_source(*e, {o.since_ns, o.pid, o.max_ops});
  return write_report(*src, o);
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  add_db_option(app, a->o.db_path);
  app.add_option("-o,--output", a->o.out_path, "the HTML file to write ('-' = stdout)")->required();
  app.add_option("--since", a->since, "only the last D of the session's data (500ms, 30s, 5m, 2h)");
  app.add_option("--pid", a->o.pid, "only chains and ops of this process (as victim or culprit)");
  app.add_option("--session", a->o.session_id, "session id (default: the latest)");
  app.add_option("--chains", a->o.max_chains, "at most N chains drawn, most severe first (default 10)")->check(CLI::Range(1, 1000));
  app.add_option("--ops", a->o.max_ops, "at most N op histograms, largest total time first (default 24)")->check(CLI::Range(1, 1000));
  app.add_flag("--quiet,-q", a->quiet, "print nothing on success");
  fleet::add_fleet_flags(app, a->fleet, "--fleet",
                         "read the ClickHouse fleet store at this URL (every shipped host) instead of --db");
  app.footer(
      "One HTML file with everything inline (SVG, CSS, no script, no URL): the hosts and GPUs, each causal\n"
      "chain with its culprit, fix and swimlanes around the worst call, and a latency histogram per op with\n"
      "the tail coloured by cause. Open it in any browser, offline. See docs/REPORT.md.\n\n"
      "Examples:\n"
      "  causeway demo incident --db /tmp/d.db && causeway report --db /tmp/d.db -o incident.html\n"
      "  causeway report --since 10m --pid 4821 -o last10m.html\n"
      "  causeway report --fleet http://ch:8123 --user causeway_reader --password-file reader.pw -o fleet.html");
  return [a] {
    ReportOptions o = a->o;
    o.requests = requests_provider();
    if (!a->since.empty()) {
      auto d = parse_duration_ns(a->since);
      if (!d) return report_error("report", d.error(), false);
      o.since_ns = *d;
    }
    auto s = a->fleet.url.empty() ? write_report(o) : fleet_report(*a, o);
    if (!s) return report_error("report", s.error(), false);
    if (!a->quiet && o.out_path != "-")
      std::fprintf(stderr, "wrote %s: %s, %zu chains (%zu with swimlanes), %zu op histograms%s%s, %s in %.2fs\n",
                   o.out_path.c_str(), s->origin.c_str(), s->chains, s->swimlanes, s->histograms,
                   s->hosts ? (", " + std::to_string(s->hosts) + " hosts").c_str() : "",
                   s->requests ? ", requests" : "", format_bytes(static_cast<int64_t>(s->bytes)).c_str(), s->seconds);
    return kExitOk;
  };
}

const Registrar reg{{"report", "write a session as one self-contained HTML report (opens offline)", 77, setup}};

}  // namespace causeway::cli::cmd_report
