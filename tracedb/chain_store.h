// Storing diagnosed chains for a session that is already written (after a demo or an
// import). During a live trace chains go through StoreWriter::push_meta instead.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>

#include "common/result.h"
#include "tracedb/records.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// The one statement that writes a chain row (INSERT OR REPLACE by id: a live chain updated
// by a later poll replaces its row), shared by replace_session_chains and the StoreWriter.
extern const char* const kUpsertChainSql;
// Binds c to a statement prepared from kUpsertChainSql (created_ns = now_ns).
void bind_chain(Statement& st, int64_t session_id, int64_t now_ns, const ChainRecord& c);

// In one transaction on a connection opened for writing: deletes the session's chains and
// inserts these (ids are globally unique: they embed the session id).
Result<void> replace_session_chains(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains);

}  // namespace causeway
