// The writer's transactions and their faults: one batch per BEGIN IMMEDIATE … COMMIT (meta
// rows first, then the event tables), what a failed write is (a full disk, an I/O error, a
// deleted or replaced DB: WriteFault), what it loses and how it is put on record
// (docs/COLLECTOR.md "Faults").
#include <sys/stat.h>

#include <cerrno>

#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"

namespace causeway {

const char* write_fault_name(WriteFault f) {
  switch (f) {
    case WriteFault::none: return "none";
    case WriteFault::disk_full: return "disk_full";
    case WriteFault::io_error: return "io_error";
    case WriteFault::db_deleted: return "db_deleted";
    case WriteFault::db_replaced: return "db_replaced";
    case WriteFault::write_failed: return "write_failed";
  }
  return "write_failed";
}

bool write_fault_may_clear(WriteFault f) { return f != WriteFault::db_deleted && f != WriteFault::db_replaced; }

WriteFault StoreWriter::check_db_file() const {
  if (db_ino_ == 0) return WriteFault::none;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? WriteFault::db_deleted : WriteFault::none;
  return st.st_ino != db_ino_ || st.st_dev != db_dev_ ? WriteFault::db_replaced : WriteFault::none;
}

WriteFault StoreWriter::classify_failure(int rc) {
  // The errno of the failed system call: an I/O error that is a full disk or quota.
  const int err = sqlite3_system_errno(db_.get());
  if ((rc & 0xff) == SQLITE_FULL || ((rc & 0xff) == SQLITE_IOERR && (err == ENOSPC || err == EDQUOT)))
    return WriteFault::disk_full;
  if (rc == SQLITE_READONLY_DBMOVED) {  // SQLite's own check: the file it has open left the path
    gone_ = check_db_file() == WriteFault::db_replaced ? WriteFault::db_replaced : WriteFault::db_deleted;
    return gone_;
  }
  if ((rc & 0xff) == SQLITE_IOERR) return WriteFault::io_error;
  return WriteFault::write_failed;
}

Result<void> StoreWriter::in_transaction(const std::function<Result<void>()>& body) {
  sqlite3* h = db_.get();
  Result<void> r = exec_sql(h, "BEGIN IMMEDIATE");
  if (r) r = body();
  if (r) r = exec_sql(h, "COMMIT");
  if (r) {
    commit_counters();
    return r;
  }
  batch_counters_.clear();  // rolled back: collector_stats holds what stored_counters_ says
  failure_ = classify_failure(sqlite3_extended_errcode(h));
  // Some errors (a full disk among them) roll the transaction back by themselves.
  if (!sqlite3_get_autocommit(h)) (void)exec_sql(h, "ROLLBACK");
  return make_error("db_write", "writing to " + path_ + " failed: " + r.error().message);
}

Result<void> StoreWriter::write_batch(Batch& batch, bool final_flush) {
  std::lock_guard db_lock(db_mu_);
  if (gone_ == WriteFault::none) gone_ = check_db_file();
  if (gone_ != WriteFault::none) {
    failure_ = gone_;
    return make_error("db_gone", path_ + (gone_ == WriteFault::db_deleted ? " was deleted or moved away"
                                                                          : " was replaced by another file") +
                                     " while being written; nothing more is stored");
  }
  batch_rollups_.clear();
  batch_laid_out_ = laid_out_;
  batch_max_ts_ = max_ts_seen_;
  batch_written_ = 0;
  auto r = in_transaction([&] { return write_batch_rows(batch, final_flush); });
  if (!r) {
    batch_rollups_.clear();  // those rows were not stored
    return r;
  }
  commit_rollups();
  laid_out_ = batch_laid_out_;
  bool recovered = false;
  {
    std::lock_guard lock(mu_);
    stats_.written += batch_written_;
    ++stats_.transactions;
    if (batch.rows > 0) health_.stored_at_ns = store_writer_detail::steady_now_ns();
    // Only stored rows end a fault, and a full disk only once it has room again: a small
    // batch fits in the WAL space a failed one left behind while the disk is as full as
    // before, and the next larger one fails again.
    if (health_.fault != WriteFault::none && batch.rows > 0 &&
        (health_.fault != WriteFault::disk_full || disk_has_room())) {
      recovered = true;
      health_.fault = WriteFault::none;
      health_.failing_since_ns = 0;
      fault_.store(WriteFault::none, std::memory_order_relaxed);
    }
  }
  if (recovered) (void)lock_.reserve();
  // The batch is stored whatever pruning does; a prune that fails is tried after the next one.
  if (options_.max_db_bytes > 0) (void)prune_if_needed(false);
  return {};
}


Result<void> StoreWriter::write_batch_rows(Batch& batch, bool final_flush) {
  uint64_t written = 0;
  auto failed = [&] { return make_error("db_write", sqlite_error_text(db_.get())); };
  for (const MetaRecord& m : batch.meta)
    if (write_meta(m) != SQLITE_DONE) return failed();
  for (const AggregatedCallsRecord& a : batch.aggregated) accumulate_aggregated(a);
  if (write_call_rows(batch, written) != SQLITE_DONE) return failed();
  if (write_context_rows(batch, written) != SQLITE_DONE) return failed();
  batch_written_ = written;
  if (auto r = flush_rollups(final_flush ? INT64_MAX : batch_max_ts_ - options_.rollup_lateness_ns); !r) return r;
  return write_counters(written);
}

void StoreWriter::on_write_failure(Batch& batch, bool stopping, const Error& error) {
  const WriteFault f = failure_;
  {
    std::lock_guard lock(mu_);
    for (const auto& chunk : batch.calls)
      for (const CallRecord& c : chunk) ++stats_.dropped_by_op[c.op];
    size_t switches = 0, wakeups = 0;
    for (const auto& chunk : batch.switches) switches += chunk.size();
    for (const auto& chunk : batch.wakeups) wakeups += chunk.size();
    if (switches) stats_.dropped_by_op[store_writer_detail::kSchedSwitchOp] += switches;
    if (wakeups) stats_.dropped_by_op[store_writer_detail::kSchedWakeupOp] += wakeups;
    stats_.dropped_writer += batch.rows;
    stats_.dropped_write_error += batch.rows;
    ++stats_.failed_writes;
    // Process, thread, stack and chain rows are few and events refer to them: they wait for
    // the next batch, unless there is none (stopping) or never will be (the DB is gone).
    if (!stopping && write_fault_may_clear(f)) {
      meta_.insert(meta_.begin(), std::make_move_iterator(batch.meta.begin()), std::make_move_iterator(batch.meta.end()));
      // Counted calls are rolled up in memory, only after COMMIT: they wait like the meta rows.
      aggregated_.insert(aggregated_.begin(), std::make_move_iterator(batch.aggregated.begin()),
                         std::make_move_iterator(batch.aggregated.end()));
    } else {
      stats_.dropped_meta += batch.meta.size();
    }
    batch.meta.clear();
    batch.aggregated.clear();
    health_.fault = f;
    health_.last_fault = f;
    health_.error = error.message;
    health_.ever_failed = true;
    if (health_.failing_since_ns == 0) health_.failing_since_ns = store_writer_detail::steady_now_ns();
    fault_.store(f, std::memory_order_relaxed);
  }
  if (!write_fault_may_clear(f)) return;
  std::lock_guard db_lock(db_mu_);
  if (f == WriteFault::disk_full && options_.max_db_bytes > 0) (void)prune_if_needed(true);
  // Once a second: each record commits a few WAL frames, and on a full disk it lives off the
  // frames the failed batch left past the last commit (reused, the file does not grow). The
  // lock's reserve is kept for the final record.
  const int64_t now = store_writer_detail::steady_now_ns();
  if (now - last_loss_record_ns_ < store_writer_detail::kNsPerSec) return;
  last_loss_record_ns_ = now;
  (void)write_record(std::nullopt);
}

Result<void> StoreWriter::write_record(std::optional<int64_t> stopped_ns) {
  batch_rollups_.clear();
  batch_max_ts_ = max_ts_seen_;
  auto body = [&]() -> Result<void> {
    if (stopped_ns) {
      if (auto r = flush_rollups(INT64_MAX); !r) return r;
      upd_stopped_.bind(1, *stopped_ns);
      upd_stopped_.bind(2, session_id_);
      const int rc = upd_stopped_.step();
      upd_stopped_.reset();
      if (rc != SQLITE_DONE) return make_error("db_write", sqlite_error_text(db_.get()));
    }
    return write_counters(0);
  };
  auto r = in_transaction(body);
  // The lock's reserve is for the last record: with it handed back its few pages fit.
  if (!r && stopped_ns && failure_ == WriteFault::disk_full && lock_.release_reserve()) r = in_transaction(body);
  if (r && stopped_ns) commit_rollups();
  return r;
}


}  // namespace causeway
