// The writer's chain tables: chains (call and request chains) and call_causes, whose
// statements and binds are tracedb/chain_store.h's (merge writes them too).
#include "tracedb/chain_store.h"
#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"

namespace causeway {

Result<void> StoreWriter::prepare_chain_statements(sqlite3* h) {
  using namespace store_writer_detail;
  if (auto r = prepare_into(h, upsert_chain_, kUpsertChainSql); !r) return r;
  if (auto r = prepare_into(h, upsert_call_cause_, kUpsertCallCauseSql); !r) return r;
  return prepare_into(h, del_request_chains_, kDeleteRequestChainsSql);
}

int StoreWriter::write_meta_row(const ChainRecord& c) {
  bind_chain(upsert_chain_, session_id_, store_writer_detail::wall_now_ns(), c);
  return store_writer_detail::finish_meta(upsert_chain_);
}

int StoreWriter::write_meta_row(const CallCausesRecord& cc) {
  for (const CallCauseRecord& row : cc.rows) {
    bind_call_cause(upsert_call_cause_, session_id_, row);
    if (int rc = store_writer_detail::finish_meta(upsert_call_cause_); rc != SQLITE_DONE) return rc;
  }
  return SQLITE_DONE;
}

// The session's request chains are replaced as a whole: each pass writes all of them.
int StoreWriter::write_meta_row(const RequestChainsRecord& rc) {
  Statement& d = del_request_chains_;
  d.bind(1, session_id_);
  d.bind(2, request_chain_id_prefix(session_id_));
  if (int rc_del = store_writer_detail::finish_meta(d); rc_del != SQLITE_DONE) return rc_del;
  for (const ChainRecord& c : rc.chains)
    if (int rc_ins = write_meta_row(c); rc_ins != SQLITE_DONE) return rc_ins;
  return SQLITE_DONE;
}

}  // namespace causeway
