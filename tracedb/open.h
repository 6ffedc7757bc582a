// How the trace DB is opened. Exactly one writer opens it read-write (and alone creates and
// migrates it); every reader opens it read-only and never creates, migrates or writes.
#pragma once

#include <string>

#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// Creates the missing folders (0700) and an empty DB file (0600), given to the sudo invoker
// where docs/COLLECTOR.md says; refuses ("db_owner") a DB that belongs to another user.
Result<void> prepare_db_files(const std::string& path);

// Creates parent folders and the DB if needed, enables WAL, applies migrations.
// Fails with "db_too_new", "db_foreign", "db_corrupt" or "db_open".
Result<DbHandle> open_for_write(const std::string& path);

// Opens read-only. When the DB is in WAL mode in a folder we cannot write (no -shm can be
// created) and no writer is live, falls back to immutable=1. Fails with "db_missing",
// "db_corrupt", "db_foreign", "db_too_new", "db_too_old" or "db_open".
Result<DbHandle> open_read_only(const std::string& path);

// Puts a DB the writer is done with back into rollback-journal mode, so readers on a
// read-only copy or folder need no -shm/-wal. Best effort: skipped while readers hold it.
void close_writer_cleanly(DbHandle& db);

}  // namespace causeway
