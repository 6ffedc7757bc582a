// Storing diagnosed chains (and which cause claimed each slow call) for a session that is already written (after a demo or an
// import). During a live trace chains go through StoreWriter::push_meta instead.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"
#include "tracedb/records.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// The one statement that writes a chain row (INSERT OR REPLACE by id: a live chain updated
// by a later poll replaces its row), shared by replace_session_diagnosis and the StoreWriter.
extern const char* const kUpsertChainSql;
// Binds c to a statement prepared from kUpsertChainSql (created_ns = now_ns).
void bind_chain(Statement& st, int64_t session_id, int64_t now_ns, const ChainRecord& c);

// The one statement that writes a call_causes row (INSERT OR REPLACE on its key: a claim seen
// again by a later pass replaces the earlier one), shared by replace_session_diagnosis and the
// StoreWriter.
extern const char* const kUpsertCallCauseSql;
void bind_call_cause(Statement& st, int64_t session_id, const CallCauseRecord& c);

// Request-level chains (docs/INFERENCE.md "Request chains") have ids starting with this
// prefix: "s<session>-req-". A pass over the requests replaces all of them at once, so a cause
// that left the tail leaves no stale chain behind.
std::string request_chain_id_prefix(int64_t session_id);
// Deletes the session's request-level chains (?1 session id, ?2 the prefix above).
extern const char* const kDeleteRequestChainsSql;

// In one transaction on a connection opened for writing: the session's request-level chains
// become exactly these (after a demo or a merge; a live trace sends a RequestChainsRecord).
Result<void> replace_request_chains(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains);

// In one transaction on a connection opened for writing: deletes the session's chains and
// call causes and inserts these (chain ids are globally unique: they embed the session id).
Result<void> replace_session_diagnosis(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains,
                                       std::span<const CallCauseRecord> call_causes);

}  // namespace causeway
