// `causeway ship`: every session of a trace DB into the fleet store (docs/FLEET.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "fleet/clickhouse.h"
#include "fleet/endpoint.h"

namespace causeway::fleet {

struct ShipSummary {
  std::string host;                       // the host of the latest session
  std::vector<int64_t> sessions;          // local session ids shipped
  std::map<std::string, int64_t> rows;    // rows sent now per table (0: the store had them)
};

inline constexpr size_t kDefaultBatchRows = 100000;

// Opens db_path read-only, creates the store's tables if missing, and sends what the store
// lacks. Any failure stops at once with the connection's error; what was confirmed stays, and
// the next run resumes from there. `stop` (trace --ship) ends every call at once when set, and
// none runs past its `until_ns`.
Result<ShipSummary> ship_db(const Endpoint& endpoint, const std::string& db_path, size_t batch_rows = kDefaultBatchRows,
                            std::shared_ptr<const CallStop> stop = nullptr);

}  // namespace causeway::fleet
