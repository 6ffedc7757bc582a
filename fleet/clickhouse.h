// A ClickHouse HTTP client for the fleet store (cpp-httplib underneath, seen by no other file).
// Statements go in the POST body, rows to insert (Native columns, or TabSeparated for the small
// snapshot tables) with the INSERT in the URL;
// credentials go in the X-ClickHouse-User / X-ClickHouse-Key headers, which ClickHouse 18.16
// (Debian's) already accepts. No settings are ever sent with a query: a reader's profile may
// be readonly=1, where ClickHouse refuses any (docs/FLEET.md).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fleet/endpoint.h"

namespace causeway::fleet {

class ClickHouse {
 public:
  explicit ClickHouse(Endpoint e);
  ~ClickHouse();
  ClickHouse(const ClickHouse&) = delete;
  ClickHouse& operator=(const ClickHouse&) = delete;

  // Runs one statement; returns the response body. Errors: "fleet_unreachable" (no
  // connection, or it broke: the server died, the network was cut), "fleet_auth" (wrong user
  // or password), "fleet_refused" (ClickHouse answered with an error: its message).
  Result<std::string> execute(const std::string& sql);

  // execute() with the store's database as the current one, so a reader's own SQL (run_sql)
  // names tables unqualified. `database` is a URL parameter, not a setting: readonly=1 allows it.
  Result<std::string> execute_in_database(const std::string& sql);

  // INSERT INTO <table> FORMAT TabSeparated with `tsv` as the rows.
  Result<void> insert_tsv(const std::string& table, const std::string& tsv);

  // INSERT INTO <table> FORMAT Native with the pieces of a block (fleet/native_block.h) as
  // the body, streamed from where they are (a batch is tens of MB: no copy of it is made).
  Result<void> insert_native(const std::string& table, const std::vector<std::string_view>& pieces);

  // A SELECT read as TabSeparated rows of unescaped fields.
  Result<std::vector<std::vector<std::string>>> select(const std::string& sql);

  const Endpoint& endpoint() const { return e_; }
  std::string table(const std::string& name) const { return e_.database + "." + name; }

 private:
  Result<std::string> post(const std::string& query_param, const std::string& body, bool in_database = false,
                           const std::vector<std::string_view>* pieces = nullptr);
  struct Impl;
  Endpoint e_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace causeway::fleet
