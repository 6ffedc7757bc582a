// A read that may miss committed data: a WAL DB opened with immutable=1 (no -shm could be
// made) reads the DB file alone, while commits not yet checkpointed are only in the -wal.
// Said on stderr and in the JSON outputs as "stale": true plus a "warnings" entry
// (docs/INTERFACES.md "Stale reads").
#pragma once

#include <sqlite3.h>

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace causeway {

// True when DB_PATH-wal holds a committed transaction whose pages (or database size) differ
// from the DB file's: what an immutable=1 reader would miss. An -wal that exists but cannot
// be read counts as stale (nothing says it is not). Reads the -wal and the DB file only.
bool wal_has_unmerged_commits(const std::string& db_path);

// The URI parameter open_read_only adds to such a connection (SQLite ignores parameters it
// does not know and keeps them for sqlite3_uri_parameter).
inline constexpr const char* kStaleUriParam = "causeway_stale";

// True when `db` came from open_read_only with data only in the -wal.
bool read_is_stale(sqlite3* db);
std::string stale_read_warning(const std::string& path);
// Adds "stale": true and the warning to `doc["warnings"]` when `db` is such a read.
void note_stale_read(nlohmann::json& doc, sqlite3* db);

}  // namespace causeway
