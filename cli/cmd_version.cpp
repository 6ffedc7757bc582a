#include <sqlite3.h>

#include <iostream>

#include "cli/command.h"
#include "tracedb/schema.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_version {

Runner setup(CLI::App& app) {
  app.footer("Example:\n  causeway version");
  return [] {
    std::cout << "causeway " << CAUSEWAY_VERSION << " (trace DB schema " << latest_schema_version() << ", SQLite "
              << sqlite3_libversion() << ")" << std::endl;
    return kExitOk;
  };
}

const Registrar reg{{"version", "print the version", 100, setup}};

}  // namespace causeway::cli::cmd_version
