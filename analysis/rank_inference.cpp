#include "analysis/rank_inference.h"

#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

int64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  // Positive, so it never reads as the handle of a real pointer-sized id turned negative.
  return static_cast<int64_t>(h >> 1);
}

}  // namespace

Result<void> RankInference::load(sqlite3* db, int64_t session_id) {
  auto st = Statement::prepare(db,
                               "SELECT pid, rank, world_size, rank_source, coalesce(job_id, '') FROM processes "
                               "WHERE session_id = ?1 AND rank IS NOT NULL AND world_size > 0");
  if (!st) return {};  // schema before 3: no launcher ranks recorded
  st->bind(1, session_id);
  while (st->step() == SQLITE_ROW) {
    Launcher l;
    l.rank = static_cast<int32_t>(st->col_int(1));
    l.world_size = static_cast<int32_t>(st->col_int(2));
    l.source = st->col_text(3);
    l.job_id = st->col_text(4);
    procs_[static_cast<uint32_t>(st->col_int(0))] = std::move(l);
  }
  return {};
}

bool RankInference::resolve(CollectiveEntry& e) {
  if (e.rank >= 0) return false;
  auto p = procs_.find(e.pid);
  if (p == procs_.end()) return false;
  auto [it, inserted] = comm_of_handle_.try_emplace({e.pid, e.comm}, 0);
  if (inserted) {
    int ordinal = handles_seen_[e.pid]++;
    it->second = fnv1a(p->second.job_id + "\n" + std::to_string(p->second.world_size) + "\n" + std::to_string(ordinal));
  }
  e.comm = it->second;
  e.rank = p->second.rank;
  e.nranks = p->second.world_size;
  return true;
}

std::string RankInference::source(uint32_t pid) const {
  auto p = procs_.find(pid);
  return p == procs_.end() ? std::string() : p->second.source;
}

}  // namespace causeway
