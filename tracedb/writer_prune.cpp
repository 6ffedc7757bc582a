// --max-db and a filling file system: the writer prunes the oldest raw rows (events, sched,
// wakeups and the event_blocks entries of events gone) so the DB stays under its cap and the WAL
// can still be checkpointed (docs/COLLECTOR.md "Faults").
#include <sys/statvfs.h>

#include <algorithm>
#include <optional>
#include <string>

#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"

namespace causeway {
namespace store_writer_detail {

// With --max-db the file system is a cap too: the writer prunes while less than this is left
// free (its own free pages counted), so the WAL can still be checkpointed. A WAL checkpoint
// lands up to ~4 MiB of pages (SQLite's 1000-page auto-checkpoint) and one batch adds up to
// 65,536 rows × ~110 B ≈ 7 MiB: 16 MiB covers both. A smaller file system keeps half of itself
// free: a quarter was too little for a checkpoint and a batch landing together on 32 MiB.
constexpr int64_t kMinFreeBytes = 16 << 20;

struct FsRoom {
  int64_t free = 0;   // bytes this process may still allocate
  int64_t floor = 0;  // kMinFreeBytes, or half of a smaller file system
};
std::optional<FsRoom> fs_room(const std::string& path) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) != 0) return std::nullopt;
  const int64_t frsize = static_cast<int64_t>(fs.f_frsize);
  return FsRoom{static_cast<int64_t>(fs.f_bavail) * frsize,
                std::min<int64_t>(kMinFreeBytes, static_cast<int64_t>(fs.f_blocks) * frsize / 2)};
}

}  // namespace store_writer_detail

bool StoreWriter::disk_has_room() const {
  auto fs = store_writer_detail::fs_room(path_);
  return !fs || fs->free >= fs->floor;
}

Result<void> StoreWriter::prune_if_needed(bool disk_full) {
  sqlite3* h = db_.get();
  auto pages = query_int(h, "PRAGMA page_count");
  auto free_pages = query_int(h, "PRAGMA freelist_count");
  auto page_size = query_int(h, "PRAGMA page_size");
  if (!pages || !free_pages || !page_size) return make_error("db_write", "cannot measure DB size for --max-db");
  const int64_t page = page_size->value_or(4096);
  const int64_t used = (pages->value_or(0) - free_pages->value_or(0)) * page;
  if (used <= 0) return {};
  // The cap: prune at 90% of it down to 70%, headroom for the WAL checkpoint to land pages
  // and for the next batches before the following check.
  double fraction = 0;
  if (used > options_.max_db_bytes * 9 / 10)
    fraction = 1.0 - (0.7 * static_cast<double>(options_.max_db_bytes)) / static_cast<double>(used);
  // The file system: free pages inside the DB are reused before the file grows, so they
  // count as room. Pruned for room, the file is not shrunk: moving the pages that
  // incremental_vacuum moves would need the very WAL space that is missing.
  bool shrink = true;
  if (auto fs = store_writer_detail::fs_room(path_)) {
    const int64_t room = (disk_full ? 0 : fs->free) + free_pages->value_or(0) * page;
    // Deleting rows rewrites their leaf pages through the WAL before they are freed: at most
    // 30% a time (the cap's 90% → 70%), again after the next batch if that was not enough.
    if (room < fs->floor) {
      fraction = std::max(fraction, std::min(0.3, static_cast<double>(2 * fs->floor - room) / static_cast<double>(used)));
      shrink = false;
    }
  }
  if (fraction <= 0) return {};
  fraction = std::clamp(fraction, 0.05, 1.0);
  uint64_t removed = 0;
  auto r = in_transaction([&]() -> Result<void> {
    for (const char* table : {"events", "sched", "wakeups"}) {
      auto lo = query_int(h, std::string("SELECT min(id) FROM ") + table);
      auto hi = query_int(h, std::string("SELECT max(id) FROM ") + table);
      if (!lo || !hi || !lo->has_value()) continue;
      int64_t cut = **lo + static_cast<int64_t>(fraction * static_cast<double>(**hi - **lo + 1));
      if (auto d = exec_sql(h, std::string("DELETE FROM ") + table + " WHERE id < " + std::to_string(cut)); !d) return d;
      removed += static_cast<uint64_t>(sqlite3_changes(h));
      if (std::string_view(table) == "events")
        if (auto d = exec_sql(h, "DELETE FROM event_blocks WHERE last_id < " + std::to_string(cut)); !d) return d;
    }
    return {};
  });
  if (!r) return r;
  // Hand the freed pages back so the file itself shrinks, then checkpoint so it happens now.
  (void)exec_sql(h, shrink ? "PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);" : "PRAGMA wal_checkpoint(TRUNCATE);");
  std::lock_guard lock(mu_);
  stats_.pruned += removed;
  return {};
}

}  // namespace causeway
