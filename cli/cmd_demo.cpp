#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "synth/scenarios.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_demo {

struct DemoArgs {
  std::string scenario = "incident";
  bool list = false;
  std::string db;
  uint64_t seed = 1;
  uint64_t events = 0;
  int64_t start_ns = 0;
  bool quiet = false;
};

int list_scenarios() {
  size_t width = 0;
  for (const auto& s : demo_scenarios()) width = std::max(width, s.name.size());
  for (const auto& s : demo_scenarios()) {
    std::printf("%-*s  %s\n", static_cast<int>(width), s.name.c_str(), s.description.c_str());
  }
  return kExitOk;
}

Runner setup(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  app.add_option("scenario", args->scenario, "scenario to write (see --list)")->capture_default_str();
  app.add_flag("--list", args->list, "list the scenarios and exit");
  add_db_option(app, args->db);
  app.add_option("--seed", args->seed, "random seed (same seed, same data)")->capture_default_str();
  app.add_option("--events", args->events, "scale the session to about N call events, within a few percent (e.g. 10000000 for benchmarks)");
  app.add_option("--start-ns", args->start_ns,
                 "start the session at this time (ns since the epoch) instead of its length before now: the same "
                 "seed and start write the same bytes, so two binaries' answers compare exactly")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quiet,-q", args->quiet, "print nothing on success");
  app.footer(
      "Writes a synthetic session (no root, no GPU) through the same writer as live traces.\n\n"
      "Examples:\n"
      "  causeway demo --list\n"
      "  causeway demo incident && causeway explain\n"
      "  causeway demo nccl-straggler --db /tmp/nccl.db --seed 7\n"
      "  causeway demo quiet --events 10000000 --db /tmp/big.db");
  return [args] {
    if (args->list) return list_scenarios();
    install_stop_handlers();
    DemoOptions opts;
    opts.scenario = args->scenario;
    opts.seed = args->seed;
    opts.events = args->events;
    opts.start_ns = args->start_ns;
    auto r = run_demo(args->db, opts, &stop_requested);
    if (!r) return report_error("demo", r.error(), false);
    if (!args->quiet || r->interrupted)
      std::fprintf(stderr, "%s scenario '%s' into %s: session %lld, %llu events, %llu sched records, %zu chains%s\n",
                   r->interrupted ? "interrupted: flushed" : "wrote", args->scenario.c_str(), args->db.c_str(),
                   static_cast<long long>(r->session_id), static_cast<unsigned long long>(r->events_written),
                   static_cast<unsigned long long>(r->sched_written), r->chains,
                   r->dropped ? (", DROPPED " + std::to_string(r->dropped)).c_str() : "");
    return kExitOk;
  };
}

const Registrar reg{{"demo", "write a synthetic incident into a trace DB (no root, no GPU)", 30, setup}};

}  // namespace causeway::cli::cmd_demo
