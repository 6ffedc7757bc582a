// The writer's life and queue: open, the producers' lanes, the writer thread's loop, close.
// Each table family's statements and rows are in its own file (tracedb/writer_*.cpp); the
// transactions and their faults in tracedb/writer_transaction.cpp.
#include "tracedb/store_writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <type_traits>
#include <variant>

#include "tracedb/op_catalog.h"
#include "tracedb/open.h"
#include "tracedb/store_writer_internal.h"

namespace causeway {

Result<std::unique_ptr<StoreWriter>> StoreWriter::open(const std::string& path, const WriterOptions& options) {
  // The lock first: a second writer must not even migrate a DB that another one is writing.
  auto as = prepare_db_files(path);
  if (!as) return as.error();
  auto lock = DbWriterLock::acquire(path, options.holder, *as);
  if (!lock) return lock.error();
  auto db = open_for_write(path);
  if (!db) return db.error();
  std::unique_ptr<StoreWriter> w(new StoreWriter(std::move(*db), std::move(*lock), path, options));
  if (struct stat st {}; ::stat(path.c_str(), &st) == 0) {
    w->db_dev_ = st.st_dev;
    w->db_ino_ = st.st_ino;
  }
  if (auto r = w->prepare_statements(); !r) return r.error();
  return w;
}

StoreWriter::StoreWriter(WriterDb db, DbWriterLock lock, std::string path, WriterOptions options)
    : db_(std::move(db)), lock_(std::move(lock)), path_(std::move(path)), options_(options), known_ops_(65536, 0) {
  for (const OpInfo& op : op_catalog()) known_ops_[op.id] = 1;
}

StoreWriter::~StoreWriter() {
  if (thread_.joinable()) (void)close(store_writer_detail::wall_now_ns());
}


Result<void> StoreWriter::prepare_statements() {
  // One per table family (tracedb/writer_*.cpp), each with its tables' columns listed once.
  sqlite3* h = db_.get();
  for (auto prepare : {&StoreWriter::prepare_event_statements, &StoreWriter::prepare_rollup_statements,
                       &StoreWriter::prepare_process_statements, &StoreWriter::prepare_chain_statements,
                       &StoreWriter::prepare_request_statements, &StoreWriter::prepare_counter_statements,
                       &StoreWriter::prepare_session_statements})
    if (auto r = (this->*prepare)(h); !r) return r;
  return {};
}

bool StoreWriter::push(const CallRecord& r) { return push_or_drop(r, calls_); }

bool StoreWriter::push(const SwitchRecord& r) { return push_or_drop(r, switches_); }

bool StoreWriter::push(const WakeupRecord& r) { return push_or_drop(r, wakeups_); }

size_t StoreWriter::push_calls(std::span<const CallRecord> rs) {
  std::lock_guard lock(mu_);
  size_t queued = queued_rows();
  size_t n = std::min(options_.queue_capacity > queued ? options_.queue_capacity - queued : 0, rs.size());
  for (size_t i = 0; i < n; ++i) accept(rs[i], calls_);
  for (size_t i = n; i < rs.size(); ++i) count_lost(rs[i].op, 1);
  return n;
}

template <typename R>
void StoreWriter::accept(const R& r, RecordLane<R>& lane) {
  lane.push(r);
  ++stats_.accepted;
  ++enqueued_seq_;
  const size_t queued = queued_rows();
  stats_.queue_peak = std::max<uint64_t>(stats_.queue_peak, queued);
  wake_idle_writer();
  if (queued - inflight_rows_ >= options_.batch_rows) wake_writer_.notify_one();
}

bool StoreWriter::nothing_to_write() const {
  return queued_rows() == 0 && meta_.empty() && aggregated_.empty() && !counters_changed_;
}

void StoreWriter::wake_idle_writer() {
  if (!writer_idle_) return;
  writer_idle_ = false;
  wake_writer_.notify_one();
}

template <typename R>
bool StoreWriter::push_or_drop(const R& r, RecordLane<R>& lane) {
  std::lock_guard lock(mu_);
  if (queued_rows() >= options_.queue_capacity) {
    if constexpr (std::is_same_v<R, CallRecord>) count_lost(r.op, 1);
    else count_lost(std::is_same_v<R, SwitchRecord> ? store_writer_detail::kSchedSwitchOp : store_writer_detail::kSchedWakeupOp, 1);
    return false;
  }
  accept(r, lane);
  return true;
}

template <typename R>
void StoreWriter::push_waiting(const R& r, RecordLane<R>& lane) {
  std::unique_lock lock(mu_);
  if (queued_rows() >= options_.queue_capacity) {
    room_wanted_ = true;
    wake_writer_.notify_one();
    batch_done_.wait(lock, [&] { return queued_rows() < options_.queue_capacity || stop_ || !thread_.joinable(); });
  }
  accept(r, lane);
}

void StoreWriter::push_wait(const CallRecord& r) { push_waiting(r, calls_); }
void StoreWriter::push_wait(const SwitchRecord& r) { push_waiting(r, switches_); }
void StoreWriter::push_wait(const WakeupRecord& r) { push_waiting(r, wakeups_); }

size_t StoreWriter::room() const {
  std::lock_guard lock(mu_);
  size_t queued = queued_rows();
  return options_.queue_capacity > queued ? options_.queue_capacity - queued : 0;
}

bool StoreWriter::wait_for_room(size_t rows, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  rows = std::min(rows, options_.queue_capacity);
  auto has_room = [&] { return queued_rows() + rows <= options_.queue_capacity; };
  if (has_room()) return true;
  room_wanted_ = true;
  wake_writer_.notify_one();
  return batch_done_.wait_for(lock, timeout, [&] { return has_room() || stop_ || !thread_.joinable(); }) &&
         has_room();
}

StoreWriter::Batch StoreWriter::take_batch() {
  Batch b;
  b.rows = calls_.rows() + switches_.rows() + wakeups_.rows();
  calls_.take_all(b.calls);
  switches_.take_all(b.switches);
  wakeups_.take_all(b.wakeups);
  b.meta.swap(meta_);
  b.aggregated.swap(aggregated_);
  inflight_rows_ = b.rows;
  counters_changed_ = false;  // write_counters() reads them after this
  return b;
}

void StoreWriter::recycle(Batch& b) {
  calls_.recycle(b.calls);
  switches_.recycle(b.switches);
  wakeups_.recycle(b.wakeups);
  inflight_rows_ = 0;
}

void StoreWriter::push_meta(MetaRecord r) {
  std::lock_guard lock(mu_);
  meta_.push_back(std::move(r));
  ++enqueued_seq_;
  wake_idle_writer();
}

void StoreWriter::push_aggregated(AggregatedCallsRecord r) {
  std::lock_guard lock(mu_);
  aggregated_.push_back(std::move(r));
  ++enqueued_seq_;
  wake_idle_writer();
}

void StoreWriter::set_counter(const std::string& name, int64_t value) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = counters_.try_emplace(name, value);
  if (!fresh && it->second == value) return;
  it->second = value;
  counters_changed_ = true;
  wake_idle_writer();
}

void StoreWriter::flush() {
  std::unique_lock lock(mu_);
  if (!thread_.joinable()) return;
  uint64_t target = enqueued_seq_;
  flush_requested_ = true;
  wake_writer_.notify_one();
  batch_done_.wait(lock, [&] { return committed_seq_ >= target || stop_; });
}

WriterCounters StoreWriter::counters() const {
  std::lock_guard lock(mu_);
  return stats_;
}

WriterHealth StoreWriter::health() const {
  std::lock_guard lock(mu_);
  return health_;
}

void StoreWriter::count_lost(uint16_t op, uint64_t n) {
  stats_.dropped_writer += n;
  stats_.dropped_by_op[op] += n;
}

void StoreWriter::run() {
  const auto interval = std::chrono::milliseconds(options_.flush_interval_ms);
  // SQLite may make or remove files on this thread too (a -journal, the -wal after a writer
  // of another process left WAL mode): as the user the DB is for, like the open.
  auto as = AsFsUser::enter(db_.as);
  if (!as) {  // never as root instead: nothing is written, and producers stop waiting
    fault_ = WriteFault::write_failed;
    std::lock_guard lock(mu_);
    stop_ = true;
    batch_done_.notify_all();
    return;
  }
  for (;;) {
    Batch batch;
    bool stopping = false;
    uint64_t seq = 0;
    {
      std::unique_lock lock(mu_);
      auto now_wanted = [&] { return stop_ || flush_requested_ || room_wanted_; };
      // Idle: no wake-up each interval with nothing to store; the first push ends the sleep,
      // and rows then wait the interval as before to be written together.
      if (!now_wanted() && nothing_to_write()) {
        writer_idle_ = true;
        wake_writer_.wait(lock, [&] { return now_wanted() || !writer_idle_; });
        writer_idle_ = false;
      }
      wake_writer_.wait_for(lock, interval, [&] { return now_wanted() || queued_rows() >= options_.batch_rows; });
      stopping = stop_;
      flush_requested_ = false;
      room_wanted_ = false;
      batch = take_batch();
      seq = enqueued_seq_;
    }
    // A batch with nothing in it and no counter changed is no transaction.
    const bool empty = batch.rows == 0 && batch.meta.empty() && batch.aggregated.empty();
    if (!empty || stopping || counters_differ_from_stored()) {
      Result<void> r = write_batch(batch, stopping);
      if (!r) on_write_failure(batch, stopping, r.error());
    }
    {
      std::lock_guard lock(mu_);
      recycle(batch);
      committed_seq_ = seq;
    }
    batch_done_.notify_all();
    if (stopping) {
      std::lock_guard lock(mu_);
      if (queued_rows() == 0 && meta_.empty() && aggregated_.empty()) return;
    }
  }
}

int StoreWriter::write_meta(const MetaRecord& m) {
  return std::visit([this](const auto& row) { return write_meta_row(row); }, m);
}

Result<void> StoreWriter::close(int64_t stopped_ns) {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_writer_.notify_one();
    thread_.join();
  }
  Result<void> r;
  auto as = AsFsUser::enter(db_.as);
  if (!as) r = as.error();
  if (db_ && as) {
    std::lock_guard db_lock(db_mu_);
    if (gone_ == WriteFault::none) gone_ = check_db_file();
    if (gone_ == WriteFault::none) {
      r = write_record(stopped_ns);
      if (!r) r = make_error("db_write", "cannot store the end of the session (and its loss counts): " + r.error().message);
    } else {
      r = make_error("db_gone", path_ + (gone_ == WriteFault::db_deleted ? " was deleted or moved away" : " was replaced") +
                                    " during the trace: its end and loss counts were not stored");
    }
    for (MultiRowInsert* ins : {&ins_events_, &ins_sched_, &ins_wakeup_}) ins->finalize();
    for (Statement* st : {&ins_rollup_, &upsert_process_,
                          &upsert_thread_, &upsert_cgroup_, &ins_stack_, &upsert_chain_, &upsert_call_cause_,
                          &del_request_chains_, &upsert_counter_, &upd_rolled_, &upd_stopped_, &ins_block_, &ins_request_, &ins_engine_sample_, &upsert_engine_})
      *st = Statement();
    // A checkpoint copies the WAL into the DB file, which grows: on a disk that is failing
    // writes it cannot complete, and it is not tried. The WAL stays, complete, beside the DB
    // (readers use it; the next writer checkpoints it).
    if (r && fault() == WriteFault::none) {
      close_writer_cleanly(db_);
    } else {
      (void)sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
      db_.reset();
    }
  }
  lock_ = DbWriterLock();
  return r;
}

}  // namespace causeway
