// The event_blocks zone map laid out by row count instead of by the writer's batches
// (docs/TRACEDB.md "Why there is no index on events.ts_ns"). A live writer cuts a block where
// its queue happened to be drained, so the same rows written twice get different blocks, and
// the correlator sizes its chunks from the blocks' rates: written by rows, the map (and every
// answer built on it) depends on the rows alone. merge and the demos use it.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// Rows per block when the map is laid out after the fact: small enough that a time window
// maps to a narrow id range (a live writer's 200 ms batches hold about as many at 20k calls/s).
inline constexpr int64_t kEventsPerLaidOutBlock = 4096;

// Replaces the session's event_blocks rows with one block per `rows_per_block` rowids counted
// from the session's first event (its rows alone: fewer where another session's rows sit in
// between). Runs in the caller's transaction when there is one.
Result<void> rebuild_event_blocks(sqlite3* db, int64_t session_id, int64_t rows_per_block);

}  // namespace causeway
