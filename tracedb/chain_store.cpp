#include "tracedb/chain_store.h"

#include <chrono>
#include <string>
#include <vector>

#include "tracedb/sqlite_handle.h"

namespace causeway {

const char* const kUpsertChainSql =
    "INSERT OR REPLACE INTO chains (id, session_id, created_ns, from_ns, to_ns, severity, cause, pid, comm, op, calls, "
    "p50_us, p99_us, slow_share, culprit_pid, culprit_comm, culprit_share, summary, doc) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

void bind_chain(Statement& s, int64_t session_id, int64_t now_ns, const ChainRecord& c) {
  s.bind(1, c.id);
  s.bind(2, session_id);
  s.bind(3, now_ns);
  s.bind(4, c.from_ns);
  s.bind(5, c.to_ns);
  s.bind(6, c.severity);
  s.bind(7, c.cause);
  if (c.pid) s.bind(8, int64_t{*c.pid});
  else s.bind_null(8);
  s.bind(9, c.comm);
  s.bind(10, c.op);
  s.bind(11, c.calls);
  s.bind(12, c.p50_us);
  s.bind(13, c.p99_us);
  s.bind(14, c.slow_share);
  if (c.culprit_pid) s.bind(15, int64_t{*c.culprit_pid});
  else s.bind_null(15);
  s.bind(16, c.culprit_comm);
  s.bind_opt(17, c.culprit_share);
  s.bind(18, c.summary);
  s.bind(19, c.doc);
}

const char* const kUpsertCallCauseSql =
    "INSERT OR REPLACE INTO call_causes (session_id, op_id, pid, tid, ts_ns, gap, dur_ns, lost_ns, cause, chain_id) "
    "VALUES (?,?,?,?,?,?,?,?,?,?)";

void bind_call_cause(Statement& s, int64_t session_id, const CallCauseRecord& c) {
  s.bind(1, session_id);
  s.bind(2, int64_t{c.op});
  s.bind(3, int64_t{c.pid});
  s.bind(4, int64_t{c.tid});
  s.bind(5, c.ts_ns);
  s.bind(6, int64_t{c.gap ? 1 : 0});
  s.bind(7, c.dur_ns);
  s.bind(8, c.lost_ns);
  s.bind(9, c.cause);
  s.bind(10, c.chain_id);
}

std::string request_chain_id_prefix(int64_t session_id) { return "s" + std::to_string(session_id) + "-req-"; }

const char* const kDeleteRequestChainsSql =
    "DELETE FROM chains WHERE session_id = ?1 AND substr(id, 1, length(?2)) = ?2";

namespace {

// One transaction: runs each delete (?1 the session id; ?2, when the statement has it, the
// request chain prefix), then inserts the chains and the call causes.
Result<void> replace_rows(sqlite3* db, int64_t session_id, const std::vector<std::string>& deletes,
                          std::span<const ChainRecord> chains, std::span<const CallCauseRecord> call_causes) {
  if (auto r = exec_sql(db, "BEGIN IMMEDIATE"); !r) return r;
  auto fail = [&](const std::string& what) {
    std::string e = sqlite_error_text(db);
    (void)exec_sql(db, "ROLLBACK");
    return make_error("db_write", what + ": " + e);
  };
  for (const std::string& sql : deletes) {
    auto del = Statement::prepare(db, sql);
    if (!del) return fail("cannot prepare " + sql);
    del->bind(1, session_id);
    if (sqlite3_bind_parameter_count(del->get()) >= 2) del->bind(2, request_chain_id_prefix(session_id));
    if (del->step() != SQLITE_DONE) return fail("cannot delete the session's old rows (" + sql + ")");
  }
  auto ins = Statement::prepare(db, kUpsertChainSql);
  if (!ins) return fail("cannot prepare the chain insert");
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const ChainRecord& c : chains) {
    bind_chain(*ins, session_id, now, c);
    if (ins->step() != SQLITE_DONE) return fail("cannot insert chain " + c.id);
    ins->reset();
  }
  auto ins_cause = Statement::prepare(db, kUpsertCallCauseSql);
  if (!ins_cause) return fail("cannot prepare the call cause insert");
  for (const CallCauseRecord& c : call_causes) {
    bind_call_cause(*ins_cause, session_id, c);
    if (ins_cause->step() != SQLITE_DONE) return fail("cannot insert a call cause");
    ins_cause->reset();
  }
  if (auto r = exec_sql(db, "COMMIT"); !r) return fail("cannot commit the chains");
  return {};
}

}  // namespace

Result<void> replace_request_chains(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains) {
  return replace_rows(db, session_id, {kDeleteRequestChainsSql}, chains, {});
}

Result<void> replace_session_diagnosis(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains,
                                       std::span<const CallCauseRecord> call_causes) {
  return replace_rows(db, session_id,
                      {"DELETE FROM chains WHERE session_id = ?1", "DELETE FROM call_causes WHERE session_id = ?1"}, chains,
                      call_causes);
}

}  // namespace causeway
