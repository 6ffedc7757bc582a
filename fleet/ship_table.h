// One table of one session to the fleet store, exactly once (docs/FLEET.md "Exactly once").
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "common/result.h"
#include "fleet/clickhouse.h"
#include "fleet/tables.h"

namespace causeway::fleet {

// Which session of which host: the first columns of every row and of every lookup.
struct SessionKey {
  std::string host, boot_id;
  int64_t start = 0, id = 0;
  std::string tsv_prefix() const;   // the key as the first TabSeparated fields, tab-terminated
  std::string where() const;        // host = '…' AND boot_id = '…' AND …
};

struct ShipContext {
  ClickHouse& ch;
  ClickHouse& sender;   // a second connection: append batches go out on it while the next is read
  sqlite3* db;          // the trace DB, opened read-only
  size_t batch_rows;    // rows per INSERT: bounds memory (one batch of text at a time)
  uint64_t& ver;        // strictly increasing version for the replace engine and progress rows
};

// Returns the rows sent now (0 when the store already had them all).
Result<int64_t> ship_table(ShipContext& c, const SessionKey& key, const TableSpec& spec);

}  // namespace causeway::fleet
