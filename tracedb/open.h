// How the trace DB is opened. Exactly one writer opens it read-write (and alone creates and
// migrates it); every reader opens it read-only and never creates, migrates or writes.
#pragma once

#include <optional>
#include <string>

#include "common/fs_user.h"
#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// A writer's connection and who its files are made as: root writing into a user's folder
// acts on files as that user (common/fs_user.h), on every thread that may make SQLite open,
// create or remove one (the open, the writer thread, the close).
struct WriterDb {
  DbHandle db;
  std::optional<FsUser> as;
  sqlite3* get() const { return db.get(); }
  explicit operator bool() const { return static_cast<bool>(db); }
  void reset() { db.reset(); }
};

// Creates the missing folders (0700) and an empty DB file (0600) as the user the DB is for
// (write_identity_for: the sudo invoker in their own folder), and returns that user. Refuses
// a DB that is a symbolic link or not a regular file ("db_link"), has other hard links
// ("db_link"), or belongs to someone else than that user ("db_owner").
Result<std::optional<FsUser>> prepare_db_files(const std::string& path);

// Creates parent folders and the DB if needed, enables WAL, applies migrations.
// Fails with "db_too_new", "db_foreign", "db_corrupt", "db_owner", "db_link" or "db_open".
Result<WriterDb> open_for_write(const std::string& path);

// Opens read-only. A reader never creates a file in a folder it does not own (root
// included): a WAL DB whose -shm is missing there, or cannot be made, is opened with
// immutable=1, which reads the DB file alone. When its -wal then holds committed pages the
// DB file lacks, the answer is stale: that is said on stderr (once per path) and
// tracedb/stale_read.h tells the JSON outputs (docs/INTERFACES.md "Stale reads"). Fails with
// "db_missing", "db_corrupt", "db_foreign", "db_too_new", "db_too_old" or "db_open".
Result<DbHandle> open_read_only(const std::string& path);

// Puts a DB the writer is done with back into rollback-journal mode, so readers on a
// read-only copy or folder need no -shm/-wal. Best effort: skipped while readers hold it.
void close_writer_cleanly(WriterDb& db);

}  // namespace causeway
