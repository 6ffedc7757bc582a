#include "diagnosis/chunk_sizing.h"

#include <algorithm>

#include "tracedb/sqlite_handle.h"

namespace causeway {

Result<double> rollup_peak_calls_per_ns(sqlite3* db, int64_t session_id) {
  auto st = Statement::prepare(db,
                               "SELECT max(n) FROM (SELECT sum(count) AS n FROM rollups WHERE session_id = ?1 GROUP BY sec)");
  if (!st) return st.error();
  st->bind(1, session_id);
  if (st->step() == SQLITE_ROW && !st->col_null(0)) return static_cast<double>(st->col_int(0)) / 1e9;
  return 0.0;
}

ChunkSpan chunk_span(const CorrelatorOptions& options, double events_per_ns) {
  ChunkSpan span{options.chunk_ns, options.context_ns};
  if (events_per_ns <= 0) return span;
  // ns of data that fit the budget: a chunk and context on each side (context ≈ chunk / 2).
  const double fit = kChunkEventBudget / events_per_ns;
  const int64_t floor_ns = std::min(kMinChunkNs, options.chunk_ns);
  while (span.chunk_ns / 2 >= floor_ns && static_cast<double>(span.chunk_ns) > fit / 2) span.chunk_ns /= 2;
  span.context_ns = std::min<int64_t>(options.context_ns, std::max<int64_t>(span.chunk_ns / 2, kMinChunkNs / 2));
  return span;
}

}  // namespace causeway
