// The connection flags every fleet command shares (docs/INTERFACES.md "Fleet"):
// --database, --user, --password-file, --ca-file beside the command's own URL flag, and the
// limits of every call to the store: --timeout (one call as a whole) and --max-answer (the
// most a reader's answer may hold). docs/FLEET.md "Limits and deadlines".
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "common/result.h"
#include "common/units.h"
#include "fleet/endpoint.h"

namespace causeway::fleet {

struct FleetFlags {
  std::string url;
  std::string database = "causeway";
  std::string user = "default";
  std::string password_file;
  std::string ca_file;
  std::string timeout = "60s";
  std::string max_answer = "16m";
  Result<Endpoint> endpoint() const {
    auto t = parse_duration_ns(timeout);
    if (!t || *t < 100'000'000 || *t > int64_t{86400} * 1'000'000'000)
      return make_error("usage", "--timeout: a duration from 100ms to 24h (e.g. 60s), the deadline of one call to the fleet store");
    auto m = parse_size_bytes(max_answer);
    if (!m || *m < 4096 || *m > (int64_t{64} << 30))
      return make_error("usage", "--max-answer: a size from 4k to 64g (e.g. 16m), the most one answer of the fleet store may hold");
    auto e = make_endpoint(url, database, user, password_file, ca_file);
    if (!e) return e;
    e->call_timeout = std::chrono::milliseconds(*t / 1'000'000);
    e->max_answer_bytes = static_cast<size_t>(*m);
    return e;
  }
};

// Adds the shared flags; `url_flag` ("--to" or "--fleet") names the URL's.
inline CLI::Option* add_fleet_flags(CLI::App& app, FleetFlags& f, const std::string& url_flag, const std::string& url_help) {
  CLI::Option* url = app.add_option(url_flag, f.url, url_help);
  app.add_option("--database", f.database, "ClickHouse database of the fleet store (default causeway)");
  app.add_option("--user", f.user, "ClickHouse user (default: default)");
  app.add_option("--password-file", f.password_file, "file holding the user's password (surrounding whitespace trimmed)");
  app.add_option("--ca-file", f.ca_file, "https: CA certificate that signed the server's certificate");
  app.add_option("--timeout", f.timeout, "deadline of each call to the fleet store, connect to last byte (default 60s)");
  app.add_option("--max-answer", f.max_answer, "the most one answer of the fleet store may hold (default 16m)");
  return url;
}

}  // namespace causeway::fleet
