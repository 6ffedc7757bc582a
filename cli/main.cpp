// causeway: one binary, subcommands registered by cli/cmd_*.cpp.
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "cli/json_out.h"

namespace {

// Whether the command line asks for JSON (`--json` before any `--`): a usage error found while
// parsing it is then also one {"error": …} document on stdout (docs/INTERFACES.md), so a
// script reading stdout never gets nothing.
bool asks_for_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--json") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace causeway::cli;
  CLI::App app{
      "causeway: eBPF tracer for GPU hosts. It records CUDA, NCCL and host events into a trace DB\n"
      "and explains GPU stalls as causal chains; an AI assistant can question it over MCP.\n\n"
      "Examples:\n"
      "  causeway demo incident          write a synthetic incident into the default DB\n"
      "  causeway explain                why did the GPU job stall?\n"
      "  causeway stats --since 5m       per-op latency percentiles\n"
      "  sudo causeway trace --duration 30s   trace live CUDA/NCCL processes\n"
      "  causeway mcp                    serve the trace DB to an MCP client over stdio",
      "causeway"};
  app.require_subcommand(1, 1);
  app.fallthrough(false);
  app.set_help_all_flag("--help-all", "help for every subcommand");

  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const Command& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    runners.emplace_back(sub, c.setup(*sub));
  }
  // CLI11 reports a word that names no subcommand as "A subcommand is required", which reads
  // as if none was given: name it and list the real ones.
  bool known = argc < 2 || argv[1][0] == '-';
  std::string names;
  for (const Command& c : commands()) {
    names += (names.empty() ? "" : ", ") + c.name;
    known = known || c.name == argv[1];
  }
  if (!known) {
    const std::string why = "unknown command '" + std::string(argv[1]) + "'; commands: " + names;
    std::cerr << "causeway: " << why << "\nRun 'causeway --help' for what each does." << std::endl;
    if (asks_for_json(argc, argv)) print_json({{"error", {{"code", "usage"}, {"message", why}}}});
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    if (asks_for_json(argc, argv)) print_json({{"error", {{"code", "usage"}, {"message", e.what()}}}});
    return kExitUsage;
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const std::exception& e) {
    std::cerr << "causeway: fatal: " << e.what() << std::endl;
    return kExitFailure;
  }
  return kExitUsage;
}
