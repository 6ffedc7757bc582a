#include <cstdlib>
#include <iostream>

#include "cli/command.h"
#include "cli/json_out.h"
#include "fleet/fleet_options.h"
#include "fleet/fleet_requests.h"
#include "common/units.h"
#include "diagnosis/request_latency.h"
#include "tracedb/open.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_requests {

struct RequestsArgs {
  std::string db;
  std::string since;
  std::optional<uint32_t> pid;
  std::string path;
  std::string tenant;
  std::string metric = "ttft";
  double quantile = 0.99;
  size_t slowest = 10;
  bool json = false;
  fleet::FleetFlags fleet;
};

// --fleet: every shipped host's requests from the ClickHouse store (by[].host, slowest[].host).
int run_fleet(const RequestsArgs& a, const requests::RequestQuery& q) {
  auto e = a.fleet.endpoint();
  if (!e) return report_error("requests", e.error(), a.json);
  fleet::ClickHouse ch(*e);
  auto r = fleet::fleet_requests(ch, q);
  if (!r) return report_error("requests", r.error(), a.json);
  if (a.json) print_json(std::move(*r));
  else std::cout << fleet::fleet_requests_text(*r);
  return kExitOk;
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<RequestsArgs>();
  add_db_option(app, a->db);
  app.add_option("--since", a->since, "only requests in the last D of the session's data (500ms, 30s, 5m, 2h)");
  app.add_option("--pid", a->pid, "only requests served by this process");
  app.add_option("--path", a->path, "only this path (exact, without the query string)");
  app.add_option("--tenant", a->tenant, "only this tenant (the --tenant-header value, else the client address)");
  app.add_option("--metric", a->metric, "the tail and the slowest requests by: ttft (default), itl or e2e");
  // Out of (0, 1) is a usage error, refused while parsing like any other bad value (exit 2).
  app.add_option("--quantile", a->quantile, "where the tail starts (default 0.99)")
      ->check(CLI::Validator(
          [](std::string& v) {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            return end != v.c_str() && *end == '\0' && x > 0 && x < 1 ? std::string()
                                                                      : "must be in (0, 1), e.g. 0.99 for p99";
          },
          "in (0, 1)"));
  app.add_option("--slowest", a->slowest, "list the N slowest requests by --metric (default 10)");
  app.add_flag("--json", a->json, "one JSON document on stdout (docs/INTERFACES.md \"Inference requests\")");
  fleet::add_fleet_flags(app, a->fleet, "--fleet", "read the ClickHouse fleet store at this URL (every shipped host) instead of --db");
  app.footer(
      "HTTP requests the trace saw on serving processes' sockets: TTFT (request end to the first SSE data: event),\n"
      "inter-token gaps (ITL) and end-to-end latency, per server, path and tenant, and the slowest requests.\n\n"
      "Examples:\n"
      "  causeway requests\n"
      "  causeway requests --metric itl --slowest 5\n"
      "  causeway requests --path /v1/completions --tenant acme --json");
  return [a] {
    requests::RequestQuery q;
    if (!a->since.empty()) {
      auto d = parse_duration_ns(a->since);
      if (!d) return report_error("requests", make_error("usage", "--since: " + d.error().message), a->json);
      q.since_ns = *d;
    }
    auto m = requests::metric_from(a->metric);
    if (!m) return report_error("requests", make_error("usage", "--metric must be ttft, itl or e2e"), a->json);
    q.metric = *m;
    q.pid = a->pid;
    if (!a->path.empty()) q.path = a->path;
    if (!a->tenant.empty()) q.tenant = a->tenant;
    q.quantile = a->quantile;
    q.slowest = a->slowest;
    if (!a->fleet.url.empty()) return run_fleet(*a, q);
    auto db = open_read_only(a->db);
    if (!db) return report_error("requests", db.error(), a->json);
    auto r = requests::request_latency_json(db->get(), q);
    if (!r) return report_error("requests", r.error(), a->json);
    if (a->json) print_json(std::move(*r));
    else std::cout << requests::request_latency_text(*r);
    return kExitOk;
  };
}

const Registrar reg{{"requests", "HTTP request latency of traced servers: TTFT, ITL, E2E, slowest requests", 47, setup}};

}  // namespace causeway::cli::cmd_requests
