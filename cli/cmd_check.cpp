// causeway check: readiness of this host for tracing; exit 0 ready, 1 not ready.
#include <iostream>

#include "cli/command.h"
#include "cli/json_out.h"
#include "collector/check.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_check {

Runner setup(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto db = std::make_shared<std::string>();
  add_db_option(app, *db);
  app.add_flag("--json", *json, "one JSON document on stdout");
  app.footer(
      "Checks the kernel, BTF, privileges, a trial BPF load, uprobe and tracepoint attach, tracefs,\n"
      "CUDA/NCCL libraries (with versions), GPUs and driver, running CUDA processes and the DB folder.\n\n"
      "Examples:\n"
      "  sudo causeway check\n"
      "  sudo causeway check --json | jq '.checks[] | select(.status != \"PASS\")'");
  return [json, db]() -> int {
    auto items = collector::run_checks(*db);
    const bool ready = collector::checks_ready(items);
    if (*json) {
      print_json(collector::checks_to_json(items));
    } else {
      for (const auto& i : items) {
        std::cout << (i.status == "PASS" ? "PASS " : i.status == "WARN" ? "WARN " : "FAIL ") << i.name << ": " << i.detail
                  << "\n";
        if (!i.remedy.empty()) std::cout << "     → " << i.remedy << "\n";
      }
      std::cout << (ready ? "ready to trace" : "not ready: fix the FAIL items above") << std::endl;
    }
    return ready ? kExitOk : kExitFailure;
  };
}

const Registrar reg{{"check", "is this host ready to trace? (kernel, BPF, probes, libraries)", 10, setup}};

}  // namespace causeway::cli::cmd_check
