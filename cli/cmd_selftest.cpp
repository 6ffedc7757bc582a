// causeway selftest: traces a built-in workload end to end on this host and stores a report
// (test_reports) that MCP get_test_report returns.
#include <iostream>

#include "cli/command.h"
#include "cli/json_out.h"
#include "collector/selftest.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_selftest {

Runner setup(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto db = std::make_shared<std::string>();
  add_db_option(app, *db);
  app.add_flag("--json", *json, "print the report as one JSON document on stdout");
  app.footer(
      "Forks a small workload that calls a probed function in causeway itself 2000 times, sleeps and\n"
      "fsyncs, traces it through the real BPF path, checks counts, durations, arguments, context\n"
      "switches, exit code, stacks and drops, and stores the verdict in the DB (needs root).\n\n"
      "Examples:\n"
      "  sudo causeway selftest\n"
      "  sudo causeway selftest --json --db /tmp/selftest.db");
  return [json, db]() -> int {
    auto rep = collector::run_selftest(*db);
    if (!rep) return report_error("selftest", rep.error(), *json);
    if (*json) {
      print_json(rep->doc);
    } else {
      for (const auto& c : rep->doc["checks"])
        std::cout << (c["ok"].get<bool>() ? "PASS " : "FAIL ") << c["name"].get<std::string>() << ": "
                  << c["detail"].get<std::string>() << "\n";
      std::cout << rep->summary << " (stored in " << *db << ")" << std::endl;
    }
    return rep->ok ? kExitOk : kExitFailure;
  };
}

const Registrar reg{{"selftest", "trace a built-in workload end to end and store a report (root)", 90, setup}};

}  // namespace causeway::cli::cmd_selftest
