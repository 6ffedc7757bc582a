#include "diagnosis/chunk_sizing.h"

#include <algorithm>

#include "tracedb/sqlite_handle.h"

namespace causeway {

Result<double> RollupPeak::read(sqlite3* db, int64_t session_id) {
  // A late row adds to a second at most the writer's lateness (seconds) behind the newest; a
  // second further back is final, and its sum is in peak_ already.
  constexpr int64_t kKeepSecs = 60;
  // `+session_id`: walk the rowid range, never the session's whole index range.
  auto st = Statement::prepare(db, "SELECT rowid, sec, count FROM rollups WHERE rowid > ?1 AND +session_id = ?2");
  if (!st) return st.error();
  st->bind(1, last_rowid_);
  st->bind(2, session_id);
  while (st->step() == SQLITE_ROW) {
    last_rowid_ = std::max(last_rowid_, st->col_int(0));
    const int64_t sec = st->col_int(1);
    uint64_t& n = per_sec_[sec];
    n += static_cast<uint64_t>(std::max<int64_t>(0, st->col_int(2)));
    peak_ = std::max(peak_, n);
    newest_sec_ = std::max(newest_sec_, sec);
  }
  if (per_sec_.size() > 2 * kKeepSecs) std::erase_if(per_sec_, [&](const auto& kv) { return kv.first < newest_sec_ - kKeepSecs; });
  return static_cast<double>(peak_) / 1e9;
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
