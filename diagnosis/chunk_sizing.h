// How long the correlator's chunks are (docs/DIAGNOSIS.md "Chunk sizing"). Memory bounds them:
// a chunk and its context must hold about kChunkEventBudget events. The rate that decides is
// the session's calls per second from its rollups — every call, recorded or only counted in
// the kernel (docs/COLLECTOR.md "Aggregated calls") — plus the host rows (block I/O, page
// allocations, process events) seen while loading, never the rows of calls: the same calls
// stored by default or with --record-all then get the same chunks, so the same chains.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <unordered_map>

#include "common/result.h"
#include "diagnosis/correlator_options.h"

namespace causeway {

// Events a chunk and its context hold at most (≈ 5 MB at 88 B an event).
inline constexpr double kChunkEventBudget = 60'000;
// The shortest chunk, whatever the rate.
inline constexpr int64_t kMinChunkNs = 50'000'000;

struct ChunkSpan {
  int64_t chunk_ns = 0;
  int64_t context_ns = 0;
};

// The highest count of calls in one second of the session's rollups, per ns; 0 while the
// session has no rollup rows (an old DB). Each read() takes only the rows written since the
// last (by rowid): a live correlator polls it every few seconds, and re-summing the whole
// session's rollups each time grew with the session.
class RollupPeak {
 public:
  Result<double> read(sqlite3* db, int64_t session_id);

 private:
  int64_t last_rowid_ = 0;
  int64_t newest_sec_ = INT64_MIN;
  uint64_t peak_ = 0;
  std::unordered_map<int64_t, uint64_t> per_sec_;  // recent seconds' sums (late rows add to them)
};

// The chunk for this many events per ns in memory: options.chunk_ns halved until a chunk plus
// its context fits the budget (not below kMinChunkNs). Halving rather than dividing exactly
// keeps chunk boundaries where they were when the rate moves a little: two stores of the same
// calls whose rates differ by less than a step get the same chunks.
ChunkSpan chunk_span(const CorrelatorOptions& options, double events_per_ns);

}  // namespace causeway
