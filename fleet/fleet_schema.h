// The fleet store's tables in ClickHouse, made from fleet/tables.h, and its version: `ship`
// creates what is missing; every command refuses a store a newer causeway laid out.
#pragma once

#include "common/result.h"
#include "fleet/clickhouse.h"

namespace causeway::fleet {

// Bumped when a table or column changes meaning; written into <db>.schema_version.
inline constexpr int kFleetSchemaVersion = 4;  // 2: collectives; 3: their traced handle and sequence, seq aligned across hosts;
                                               // 4: requests.tls, read_end_ns, api_wait_ns

// The writer: creates the database and the missing tables (IF NOT EXISTS, so concurrent
// shippers are fine) and records the version. Errors: the connection's, "fleet_too_new".
Result<void> ensure_fleet_schema(ClickHouse& ch);

// The readers: the store exists and is not newer than this causeway. Errors: the
// connection's, "fleet_empty" (nothing shipped yet), "fleet_too_new".
Result<void> check_fleet_schema(ClickHouse& ch);

}  // namespace causeway::fleet
