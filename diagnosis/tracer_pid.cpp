#include "diagnosis/tracer_pid.h"


#include "tracedb/sqlite_handle.h"

namespace causeway {

std::optional<uint32_t> read_tracer_pid(sqlite3* db, int64_t session_id) {
  auto st = Statement::prepare(db, "SELECT value FROM collector_stats WHERE session_id = ?1 AND name = ?2");
  if (!st) return std::nullopt;
  st->bind(1, session_id);
  st->bind(2, kTracerPidCounter);
  if (st->step() != SQLITE_ROW || st->col_int(0) <= 0) return std::nullopt;
  return static_cast<uint32_t>(st->col_int(0));
}

}  // namespace causeway
