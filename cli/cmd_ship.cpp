// `causeway ship --to URL`: the local trace DB's sessions into the ClickHouse fleet store,
// exactly once however often it runs or fails (fleet/ship.h, docs/FLEET.md).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/json_out.h"
#include "common/sanitize.h"
#include "fleet/fleet_options.h"
#include "fleet/ship.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_ship {

struct ShipArgs {
  std::string db;
  fleet::FleetFlags fleet;
  bool json = false;
};

Runner setup(CLI::App& app) {
  auto a = std::make_shared<ShipArgs>();
  add_db_option(app, a->db);
  fleet::add_fleet_flags(app, a->fleet, "--to", "ClickHouse HTTP interface, http://HOST:8123")->required();
  app.add_flag("--json", a->json, "one JSON document on stdout: {\"host\", \"sessions\", \"rows\"}");
  app.footer(
      "Sends every session of the trace DB (opened read-only) to ClickHouse: host identity, events,\n"
      "NCCL collectives (ranks resolved), sched, wakeups, rollups, stacks, chains and call causes,\n"
      "requests, engine metrics, collector counters. Tables are created\n"
      "if missing. Run it any number of times, after any failure: the store holds every row once.\n"
      "See docs/FLEET.md.\n\n"
      "Examples:\n"
      "  causeway ship --to http://clickhouse:8123 --user writer --password-file /etc/causeway/ch.pw\n"
      "  causeway explain --fleet http://clickhouse:8123 --user reader --password-file reader.pw");
  return [a] {
    auto e = a->fleet.endpoint();
    if (!e) return report_error("ship", e.error(), a->json);
    auto s = fleet::ship_db(*e, a->db);
    if (!s) return report_error("ship", s.error(), a->json);
    if (a->json) {
      nlohmann::json rows = nlohmann::json::object();
      for (const auto& [t, n] : s->rows) rows[t] = n;
      print_json({{"host", sanitize_untrusted(s->host, 128)}, {"sessions", s->sessions}, {"rows", rows}});
    } else {
      int64_t total = 0;
      for (const auto& [t, n] : s->rows) total += n;
      std::fprintf(stderr, "shipped %zu session(s) of %s to %s: %lld new rows (events %lld, sched %lld)\n", s->sessions.size(),
                   sanitize_untrusted(s->host, 128).c_str(), e->url.c_str(), static_cast<long long>(total),
                   static_cast<long long>(s->rows["events"]), static_cast<long long>(s->rows["sched"]));
    }
    return kExitOk;
  };
}

const Registrar reg{{"ship", "send the trace DB's sessions to a ClickHouse fleet store (exactly once)", 79, setup}};

}  // namespace causeway::cli::cmd_ship
