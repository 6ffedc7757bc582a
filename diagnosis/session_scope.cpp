#include "diagnosis/session_scope.h"

#include <algorithm>

#include "tracedb/sqlite_handle.h"

namespace causeway {

Result<SessionScope> resolve_scope(sqlite3* db, std::optional<int64_t> session_id, std::optional<int64_t> since_ns) {
  auto st = Statement::prepare(db,
                               "SELECT id, started_ns, stopped_ns, rolled_up_to_ns FROM sessions "
                               "WHERE (?1 IS NULL OR id = ?1) ORDER BY id DESC LIMIT 1");
  if (!st) return st.error();
  if (session_id) st->bind(1, *session_id);
  else st->bind_null(1);
  if (st->step() != SQLITE_ROW)
    return make_error("no_data", session_id ? "no session " + std::to_string(*session_id) + " in the trace DB"
                                            : "the trace DB holds no session yet: run `causeway demo` or `causeway trace`");
  SessionScope scope;
  scope.session_id = st->col_int(0);
  int64_t started = st->col_int(1);
  scope.live = st->col_null(2);
  scope.rolled_up_to_ns = st->col_int(3);
  // The end of the data: the last event start (index on ts_ns) or switch, bounded below by
  // the session's start; a stopped session ends at its stop time.
  int64_t end = scope.live ? started : st->col_int(2);
  // The zone map knows the last event end per batch; sched is small and has a ts index.
  for (const char* sql : {"SELECT max(max_end_ns) FROM event_blocks WHERE session_id = ?1",
                          "SELECT ts_ns FROM sched WHERE session_id = ?1 ORDER BY ts_ns DESC LIMIT 1"}) {
    auto q = Statement::prepare(db, sql);
    if (!q) return q.error();
    q->bind(1, scope.session_id);
    if (q->step() == SQLITE_ROW && !q->col_null(0)) end = std::max(end, q->col_int(0));
  }
  scope.to_ns = end;
  scope.from_ns = since_ns ? std::max<int64_t>(0, end - *since_ns) : started;
  return scope;
}

}  // namespace causeway
