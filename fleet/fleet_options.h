// The connection flags every fleet command shares (docs/INTERFACES.md "Fleet"):
// --database, --user, --password-file, --ca-file beside the command's own URL flag.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "common/result.h"
#include "fleet/endpoint.h"

namespace causeway::fleet {

struct FleetFlags {
  std::string url;
  std::string database = "causeway";
  std::string user = "default";
  std::string password_file;
  std::string ca_file;
  Result<Endpoint> endpoint() const { return make_endpoint(url, database, user, password_file, ca_file); }
};

// Adds the shared flags; `url_flag` ("--to" or "--fleet") names the URL's.
inline CLI::Option* add_fleet_flags(CLI::App& app, FleetFlags& f, const std::string& url_flag, const std::string& url_help) {
  CLI::Option* url = app.add_option(url_flag, f.url, url_help);
  app.add_option("--database", f.database, "ClickHouse database of the fleet store (default causeway)");
  app.add_option("--user", f.user, "ClickHouse user (default: default)");
  app.add_option("--password-file", f.password_file, "file holding the user's password (surrounding whitespace trimmed)");
  app.add_option("--ca-file", f.ca_file, "https: CA certificate that signed the server's certificate");
  return url;
}

}  // namespace causeway::fleet
