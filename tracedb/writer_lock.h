// What the one live writer of a trace DB holds beside it: the file PATH-lock, locked with
// flock() while the writer runs (so a second writer is refused, naming the first one's pid)
// and holding a little disk space the writer hands back when the disk fills, so the count
// of what was lost and the session's end can still be committed (docs/COLLECTOR.md "Faults").
//
// flock() and not a SQLite lock: readers must keep reading the WAL DB while it is written,
// and the kernel drops a flock when its holder dies, so a `kill -9`ed writer leaves nothing
// to clean up. SQLite's own POSIX locks on the DB file are untouched (another file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/fs_user.h"
#include "common/result.h"

namespace causeway {

class DbWriterLock {
 public:
  // Disk space kept in the lock file: the final transaction (counters, the rollups of what
  // was committed, sessions.stopped_ns) is a few dozen 4 KiB WAL frames; 1 MiB is ~250.
  static constexpr int64_t kReserveBytes = 1 << 20;

  // Locks DB_PATH-lock (created and removed beside the DB as `as`, the user the DB is for:
  // prepare_db_files) for `holder` (e.g. "causeway trace"). Fails with "db_busy" when another
  // process holds it.
  static Result<DbWriterLock> acquire(const std::string& db_path, std::string_view holder,
                                      const std::optional<FsUser>& as = std::nullopt);

  DbWriterLock() = default;
  DbWriterLock(DbWriterLock&& other) noexcept;
  DbWriterLock& operator=(DbWriterLock&& other) noexcept;
  DbWriterLock(const DbWriterLock&) = delete;
  DbWriterLock& operator=(const DbWriterLock&) = delete;
  ~DbWriterLock();  // removes the lock file, then unlocks

  // Hands the reserved space back to the file system; false when none was held.
  bool release_reserve();
  // Takes the reserve again (after the disk had room once more); false when it cannot.
  bool reserve();
  bool has_reserve() const { return reserved_; }
  const std::string& path() const { return path_; }

 private:
  void unlock();

  int fd_ = -1;
  std::string path_;
  std::optional<FsUser> as_;
  int64_t header_bytes_ = 0;  // the "PID holder" line
  bool reserved_ = false;
};

}  // namespace causeway
