// Storing diagnosed chains for a session that is already written (after a demo or an
// import). During a live trace chains go through StoreWriter::push_meta instead.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>

#include "common/result.h"
#include "tracedb/records.h"

namespace causeway {

// In one transaction on a connection opened for writing: deletes the session's chains and
// inserts these (ids are globally unique: they embed the session id).
Result<void> replace_session_chains(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains);

}  // namespace causeway
