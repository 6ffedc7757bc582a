// Which session and time window a reader's question is about. Every reader resolves
// scope the same way: the named session, else the latest; the window ends at the end of
// that session's data and reaches back `since` (or to the session's start).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>

#include "common/result.h"

namespace causeway {

// Not a stored row (tracedb/records.h SessionInfo is the `sessions` row a writer stores: the
// host's identity): the window a reader asks about, resolved from that row and the session's data.
struct SessionScope {
  int64_t session_id = 0;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  int64_t rolled_up_to_ns = 0;  // rollups cover ts < this
  bool live = false;            // not stopped yet
};

// Fails with "no_data" when the DB holds no (such) session.
Result<SessionScope> resolve_scope(sqlite3* db, std::optional<int64_t> session_id, std::optional<int64_t> since_ns);

}  // namespace causeway
