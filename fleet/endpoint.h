// Where the fleet store is and who talks to it: ClickHouse's HTTP interface URL, the database,
// and the user with its password (read from a file, never from the command line, so it does
// not show in `ps`). docs/FLEET.md "A fleet: ClickHouse".
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway::fleet {

struct Endpoint {
  std::string url;                  // http://host:8123 or https://host:8443
  std::string database = "causeway";
  std::string user = "default";
  std::string password;
  std::string ca_file;              // https: the CA that signed the server's certificate
  // How long one call to the store may take as a whole, connect to last byte (--timeout), and
  // the most a reader's answer may hold (--max-answer); `ship`'s own reads have smaller limits
  // of their own (fleet/clickhouse.h). docs/FLEET.md "Limits and deadlines".
  std::chrono::milliseconds call_timeout{kDefaultCallTimeout};
  size_t max_answer_bytes = kDefaultMaxAnswerBytes;

  static constexpr std::chrono::milliseconds kDefaultCallTimeout{60'000};
  static constexpr size_t kDefaultMaxAnswerBytes = size_t{16} << 20;
};

// Fills `password` from `password_file` (trimmed like --token-file: surrounding whitespace and
// the final newline go) and checks the URL and database name. Errors: "usage", "fleet_password".
Result<Endpoint> make_endpoint(std::string url, std::string database, std::string user, const std::string& password_file,
                               std::string ca_file = "");

// A database or user name ClickHouse takes unquoted: [A-Za-z_][A-Za-z0-9_]*. The database is
// spliced into every statement, so nothing else is accepted.
bool valid_identifier(const std::string& s);

// What a reader's login reaches beyond the fleet database, asked of the server itself:
// the databases it can see besides that one (system.databases lists only those a user may
// read: allow_databases, or SQL grants on newer servers; the built-in system and
// information_schema ones are not counted) and whether it can write (its profile's readonly
// setting is 0). Read-only probes: two SELECTs, nothing is written. docs/FLEET.md "What a
// reader can see".
struct ReaderReach {
  std::vector<std::string> other_databases;
  bool can_write = false;
  bool broad() const { return can_write || !other_databases.empty(); }
  std::string describe(const Endpoint& e) const;  // "user X can read databases a, b and can write"
};
Result<ReaderReach> probe_reader_reach(const Endpoint& e);

}  // namespace causeway::fleet
