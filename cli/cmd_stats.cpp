#include <iostream>

#include "diagnosis/stats.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "common/units.h"
#include "fleet/fleet_options.h"
#include "fleet/fleet_stats.h"
#include "tracedb/open.h"
#include "tracedb/stale_read.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_stats {

struct StatsArgs {
  std::string db;
  std::string since;
  std::optional<uint32_t> pid;
  std::string source;
  std::string op;
  std::optional<int64_t> session;
  size_t top = 0;
  bool json = false;
  fleet::FleetFlags fleet;
};

// --fleet: every shipped host's ops from the ClickHouse store (ops[].host).
int run_fleet(const StatsArgs& a, const StatsQuery& q) {
  if (a.session) return report_error("stats", make_error("usage", "--session names a local session; it does not take --fleet"), a.json);
  auto e = a.fleet.endpoint();
  if (!e) return report_error("stats", e.error(), a.json);
  fleet::ClickHouse ch(*e);
  auto r = fleet::fleet_stats(ch, q);
  if (!r) return report_error("stats", r.error(), a.json);
  if (a.json) print_json(fleet::fleet_stats_json(*r));
  else std::cout << fleet::fleet_stats_text(*r);
  return kExitOk;
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<StatsArgs>();
  add_db_option(app, a->db);
  app.add_option("--since", a->since, "only the last D of the session's data (500ms, 30s, 5m, 2h)");
  app.add_option("--pid", a->pid, "only this process");
  app.add_option("--source", a->source, "only this source: cuda, driver, nccl, host, io, net, mem");
  app.add_option("--op", a->op, "only this op (e.g. cudaStreamSynchronize)");
  app.add_option("--session", a->session, "session id (default: the latest)");
  app.add_option("--top", a->top, "only the N ops with the most total time");
  app.add_flag("--json", a->json, "one JSON document on stdout");
  fleet::add_fleet_flags(app, a->fleet, "--fleet", "read the ClickHouse fleet store at this URL (every shipped host) instead of --db");
  app.footer(
      "Percentiles are over every call in the window (rollups + raw edges, within 1%).\n\n"
      "Examples:\n"
      "  causeway stats\n"
      "  causeway stats --since 5m --pid 4821\n"
      "  causeway stats --source nccl --json");
  return [a] {
    StatsQuery q;
    if (!a->since.empty()) {
      auto d = parse_duration_ns(a->since);
      if (!d) return report_error("stats", d.error(), a->json);
      q.since_ns = *d;
    }
    q.pid = a->pid;
    if (!a->source.empty()) q.source = a->source;
    if (!a->op.empty()) q.op = a->op;
    q.session_id = a->session;
    q.top_n = a->top;
    if (!a->fleet.url.empty()) return run_fleet(*a, q);
    auto db = open_read_only(a->db);
    if (!db) return report_error("stats", db.error(), a->json);
    auto r = compute_stats(db->get(), q);
    if (!r) return report_error("stats", r.error(), a->json);
    if (a->json) {
      auto doc = stats_to_json(*r);
      note_stale_read(doc, db->get());
      print_json(std::move(doc));
    }
    else std::cout << stats_to_table(*r);
    return kExitOk;
  };
}

const Registrar reg{{"stats", "per-op call counts and latency percentiles", 40, setup}};

}  // namespace causeway::cli::cmd_stats
