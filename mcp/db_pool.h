// A small pool of read-only connections to the served trace DB, so concurrent tool calls
// (HTTPS) never share a sqlite3* and a live `causeway trace` writer is never blocked (WAL).
// Connections are opened lazily: the server starts even before the DB exists, and tools
// answer "db_missing" with the remedy instead.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::mcp {

class DbPool;

// A borrowed connection; returned to the pool on destruction.
class DbLease {
 public:
  DbLease(DbPool* pool, DbHandle db) : pool_(pool), db_(std::move(db)) {}
  DbLease(DbLease&&) noexcept = default;
  DbLease& operator=(DbLease&&) noexcept = default;
  ~DbLease();
  sqlite3* get() const { return db_.get(); }

 private:
  DbPool* pool_ = nullptr;
  DbHandle db_;
};

class DbPool {
 public:
  DbPool(std::string path, size_t max_connections);
  const std::string& path() const { return path_; }
  // Blocks while all connections are out; fails when the DB cannot be opened read-only.
  Result<DbLease> acquire();

 private:
  friend class DbLease;
  void release(DbHandle db);

  std::string path_;
  size_t max_;
  size_t open_ = 0;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<DbHandle> idle_;
};

}  // namespace causeway::mcp
