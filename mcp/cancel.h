// Per-request cancellation: `notifications/cancelled` sets the flag and interrupts the SQLite
// statement the request is running (sqlite3_interrupt is safe to call from another thread
// while the connection is in use).
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <mutex>

namespace causeway::mcp {

class CancelToken {
 public:
  bool cancelled() const { return cancelled_.load(); }
  const std::atomic<bool>* flag() const { return &cancelled_; }
  void cancel() {
    cancelled_.store(true);
    std::lock_guard lock(mu_);
    if (db_) sqlite3_interrupt(db_);
  }
  // The connection the request is using right now (nullptr when none).
  void attach(sqlite3* db) {
    std::lock_guard lock(mu_);
    db_ = db;
    if (db_ && cancelled_.load()) sqlite3_interrupt(db_);
  }

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  sqlite3* db_ = nullptr;
};

// Attaches a connection to a token for one scope.
class CancelScope {
 public:
  CancelScope(CancelToken& token, sqlite3* db) : token_(token) { token_.attach(db); }
  ~CancelScope() { token_.attach(nullptr); }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  CancelToken& token_;
};

}  // namespace causeway::mcp
