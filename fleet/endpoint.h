// Where the fleet store is and who talks to it: ClickHouse's HTTP interface URL, the database,
// and the user with its password (read from a file, never from the command line, so it does
// not show in `ps`). docs/FLEET.md "A fleet: ClickHouse".
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

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

}  // namespace causeway::fleet
