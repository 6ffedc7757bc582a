// causeway: one binary, subcommands registered by cli/cmd_*.cpp.
#include <exception>
#include <iostream>
#include <string>

#include "cli/command.h"

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
    std::cerr << "causeway: unknown command '" << argv[1] << "'; commands: " << names
              << "\nRun 'causeway --help' for what each does." << std::endl;
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
