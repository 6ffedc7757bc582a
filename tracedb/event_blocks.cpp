#include "tracedb/event_blocks.h"

#include <string>

namespace causeway {

Result<void> rebuild_event_blocks(sqlite3* db, int64_t session_id, int64_t rows_per_block) {
  if (rows_per_block <= 0) return make_error("usage", "rebuild_event_blocks: rows_per_block must be positive");
  const std::string sid = std::to_string(session_id);
  // Blocks count from the session's first row, so another session's rows in the same DB move
  // no boundary.
  const std::string sql =
      "DELETE FROM event_blocks WHERE session_id = " + sid + ";"
      "INSERT INTO event_blocks (session_id, first_id, last_id, min_ts, max_ts, max_end_ns) "
      "SELECT " + sid + ", min(id), max(id), min(ts_ns), max(ts_ns), max(ts_ns + dur_ns) FROM events "
      "WHERE session_id = " + sid + " GROUP BY (id - (SELECT min(id) FROM events WHERE session_id = " + sid +
      ")) / " + std::to_string(rows_per_block) + ";";
  if (auto r = exec_sql(db, sql); !r)
    return make_error("db_write", "laying out the event_blocks zone map: " + r.error().message);
  return {};
}

}  // namespace causeway
