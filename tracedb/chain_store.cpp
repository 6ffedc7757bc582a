#include "tracedb/chain_store.h"

#include <chrono>

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

Result<void> replace_session_chains(sqlite3* db, int64_t session_id, std::span<const ChainRecord> chains) {
  if (auto r = exec_sql(db, "BEGIN IMMEDIATE"); !r) return r;
  auto fail = [&](const std::string& what) {
    std::string e = sqlite_error_text(db);
    (void)exec_sql(db, "ROLLBACK");
    return make_error("db_write", what + ": " + e);
  };
  auto del = Statement::prepare(db, "DELETE FROM chains WHERE session_id = ?1");
  if (!del) return fail("cannot prepare the chain delete");
  del->bind(1, session_id);
  if (del->step() != SQLITE_DONE) return fail("cannot delete the session's old chains");
  auto ins = Statement::prepare(db, kUpsertChainSql);
  if (!ins) return fail("cannot prepare the chain insert");
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const ChainRecord& c : chains) {
    Statement& s = *ins;
    bind_chain(s, session_id, now, c);
    if (s.step() != SQLITE_DONE) return fail("cannot insert chain " + c.id);
    s.reset();
  }
  if (auto r = exec_sql(db, "COMMIT"); !r) return fail("cannot commit the chains");
  return {};
}

}  // namespace causeway
