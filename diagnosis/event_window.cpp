#include "diagnosis/event_window.h"

#include "tracedb/sqlite_handle.h"

namespace causeway {

Result<EventIdRange> event_ids_for_window(sqlite3* db, int64_t session_id, int64_t from_ns, int64_t to_ns) {
  auto any = Statement::prepare(db, "SELECT count(*) FROM event_blocks WHERE session_id = ?1");
  if (!any) return any.error();
  any->bind(1, session_id);
  if (any->step() != SQLITE_ROW) return make_error("sql", sqlite_error_text(db));
  if (any->col_int(0) == 0) return EventIdRange{0, INT64_MAX};
  auto st = Statement::prepare(db,
                               "SELECT min(first_id), max(last_id) FROM event_blocks "
                               "WHERE session_id = ?1 AND max_ts >= ?2 AND min_ts <= ?3");
  if (!st) return st.error();
  st->bind(1, session_id);
  st->bind(2, from_ns);
  st->bind(3, to_ns);
  if (st->step() != SQLITE_ROW) return make_error("sql", sqlite_error_text(db));
  if (st->col_null(0)) return EventIdRange{};
  return EventIdRange{st->col_int(0), st->col_int(1)};
}

}  // namespace causeway
