// Subcommand registry: each cli/cmd_<name>.cpp registers itself with a static Registrar, so
// adding a subcommand touches one file. main.cpp builds the CLI11 app from the registry.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway::cli {

using Runner = std::function<int()>;

struct Command {
  std::string name;
  std::string summary;
  int order;                                   // position in `causeway --help`
  std::function<Runner(CLI::App&)> setup;      // adds options; returns what runs after parsing
};

const std::vector<Command>& commands();

struct Registrar {
  explicit Registrar(Command c);
};

// Exit codes of docs/INTERFACES.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Adds --db with its documented default ($CAUSEWAY_DB, else the XDG data folder).
void add_db_option(CLI::App& app, std::string& db);

// Prints an error the way docs/INTERFACES.md says: with --json one JSON document on stdout,
// else "causeway <cmd>: message" on stderr. Returns the exit code (2 for "usage", else 1).
int report_error(const std::string& command, const Error& error, bool json);

// Installs SIGINT/SIGTERM handlers that set a flag instead of killing the process, so
// long-running commands can flush and exit 0.
void install_stop_handlers();
bool stop_requested();

}  // namespace causeway::cli
