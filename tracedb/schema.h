// The trace DB schema, embedded from schemas/trace.sql at build time, split into its
// numbered migrations.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

// 'CWY1' in PRAGMA application_id marks a causeway trace DB.
inline constexpr int kApplicationId = 0x43575931;

struct Migration {
  int version;      // PRAGMA user_version after applying it
  std::string sql;
};

const std::vector<Migration>& schema_migrations();

// The newest schema version this binary knows.
int latest_schema_version();

// Brings db from its user_version up to `target` (default: latest), one transaction per
// migration. Refuses a DB newer than this binary.
Result<void> migrate(sqlite3* db, int target = -1);

}  // namespace causeway
