// What every fleet reader shares: the time window over the store, and reading ClickHouse's
// TabSeparated numbers. Readers run as a read-only user and send no settings (docs/FLEET.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "fleet/clickhouse.h"

namespace causeway::fleet {

struct FleetWindow {
  int64_t from_ns = 0, to_ns = 0;
};

// The store's data window: all of it, or its last `since_ns` (counted back from the newest
// event of any host, like the local commands count back from the session's). Errors: the
// connection's, "no_data" (no events shipped).
Result<FleetWindow> fleet_window(ClickHouse& ch, std::optional<int64_t> since_ns);

// The window requests --fleet judges: the events' span widened to every shipped request's
// start, so a request that came before a host's first traced call, or from a host that
// shipped requests and no call (an HTTP server traced with --http-port), is never left out
// (docs/FLEET.md "A fleet"). "no_data" when the store holds neither.
Result<FleetWindow> fleet_request_window(ClickHouse& ch, std::optional<int64_t> since_ns);

int64_t to_i64(const std::string& s);   // "\N" and "" read as 0
double to_f64(const std::string& s);
bool is_null(const std::string& s);

}  // namespace causeway::fleet
