// Maps a time window to the rowid range of `events` through the event_blocks zone map, so
// window queries read a narrow id range instead of scanning (events has no ts index).
#pragma once

#include <sqlite3.h>

#include <cstdint>

#include "common/result.h"

namespace causeway {

struct EventIdRange {
  int64_t lo = 0;  // inclusive
  int64_t hi = -1; // inclusive; hi < lo means no event can match
  bool empty() const { return hi < lo; }
};

// Ids of every event of `session_id` whose ts_ns may lie in [from_ns, to_ns]; callers still
// filter on ts_ns. A DB without blocks for the session answers the whole id space.
Result<EventIdRange> event_ids_for_window(sqlite3* db, int64_t session_id, int64_t from_ns, int64_t to_ns);

}  // namespace causeway
