#include "mcp/db_pool.h"

#include "tracedb/open.h"

namespace causeway::mcp {

DbLease::~DbLease() {
  if (pool_ && db_) pool_->release(std::move(db_));
}

DbPool::DbPool(std::string path, size_t max_connections) : path_(std::move(path)), max_(max_connections ? max_connections : 1) {}

Result<DbLease> DbPool::acquire() {
  std::unique_lock lock(mu_);
  freed_.wait(lock, [&] { return !idle_.empty() || open_ < max_; });
  if (!idle_.empty()) {
    DbHandle db = std::move(idle_.back());
    idle_.pop_back();
    return DbLease(this, std::move(db));
  }
  ++open_;
  lock.unlock();
  auto db = open_read_only(path_);
  if (!db) {
    lock.lock();
    --open_;
    freed_.notify_one();
    return db.error();
  }
  // Readers wait briefly on a writer's checkpoint instead of failing with SQLITE_BUSY.
  sqlite3_busy_timeout(db->get(), 2000);
  return DbLease(this, std::move(db.value()));
}

void DbPool::release(DbHandle db) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(db));
  freed_.notify_one();
}

}  // namespace causeway::mcp
