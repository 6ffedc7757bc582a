#include "cli/command.h"
#include "cli/json_out.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/db_path.h"
#include "common/json_exact.h"

namespace causeway::cli {
namespace {

std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}

std::atomic<bool> g_stop{false};

// The first signal asks for a clean stop; a second one, for an exit now (the DB stays
// consistent: WAL, a commit per batch), by the signal's default action.
extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

const std::vector<Command>& commands() {
  auto& r = registry();
  std::stable_sort(r.begin(), r.end(), [](const Command& a, const Command& b) { return a.order < b.order; });
  return r;
}

Registrar::Registrar(Command c) { registry().push_back(std::move(c)); }

void add_db_option(CLI::App& app, std::string& db) {
  db = default_db_path();
  app.add_option("--db", db, "trace DB file (default: $CAUSEWAY_DB, else $XDG_DATA_HOME/causeway/trace.db)")
      ->capture_default_str();
}

void print_json(nlohmann::json doc) {
  add_utc_twins(doc);
  std::cout << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

int report_error(const std::string& command, const Error& error, bool json) {
  if (json) {
    nlohmann::json doc = {{"error", {{"code", error.code}, {"message", error.message}}}};
    print_json(std::move(doc));
  } else {
    std::cerr << "causeway " << command << ": " << error.message << std::endl;
  }
  return error.code == "usage" ? kExitUsage : kExitFailure;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }

}  // namespace causeway::cli
