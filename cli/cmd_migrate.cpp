#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "tracedb/open.h"
#include "tracedb/schema.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_migrate {

Runner setup(CLI::App& app) {
  auto db = std::make_shared<std::string>();
  add_db_option(app, *db);
  app.footer("Upgrades an existing trace DB to this causeway's schema (readers never migrate).\n\n"
             "Example:\n  causeway migrate --db old-trace.db");
  return [db] {
    if (!std::filesystem::exists(*db))
      return report_error("migrate", make_error("db_missing", "no trace DB at " + *db), false);
    auto h = open_for_write(*db);
    if (!h) return report_error("migrate", h.error(), false);
    close_writer_cleanly(*h);
    std::cerr << "trace DB " << *db << " is at schema version " << latest_schema_version() << std::endl;
    return kExitOk;
  };
}

const Registrar reg{{"migrate", "upgrade a trace DB to the current schema", 90, setup}};

}  // namespace causeway::cli::cmd_migrate
