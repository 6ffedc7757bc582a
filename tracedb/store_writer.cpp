#include "tracedb/store_writer.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "tracedb/chain_store.h"
#include "tracedb/event_row.h"
#include "tracedb/op_catalog.h"
#include "tracedb/open.h"

#ifndef CAUSEWAY_VERSION
#define CAUSEWAY_VERSION "0.0.0"
#endif

namespace causeway {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kNsPerSec = 1'000'000'000;

// Events go in kEventsPerInsert rows per INSERT: the per-statement work (step, transaction
// check, halt, reset) is then paid once per group instead of once per row, which took the
// writer from 1.03M to 1.45M rows/s in bench_ingest (16 rows: 1.31M) — the margin a live
// trace needs when the traced workload fills the host's CPUs.
constexpr int kEventsPerInsert = 64;

int64_t floor_sec(int64_t ts_ns) { return ts_ns >= 0 ? ts_ns / kNsPerSec : (ts_ns - kNsPerSec + 1) / kNsPerSec; }

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

int finish_meta(Statement& s);

// 0 (not seen) is stored as NULL.
void bind_ns(Statement& s, int i, int64_t v) {
  if (v) s.bind(i, v);
  else s.bind_null(i);
}

int write_request(Statement& s, int64_t sid, const RequestRecord& q) {
  s.bind(1, sid);
  s.bind(2, q.request_id);
  s.bind(3, int64_t{q.id_generated});
  s.bind(4, int64_t{q.server_pid});
  s.bind(5, int64_t{q.fd});
  s.bind(6, q.method);
  s.bind(7, q.path);
  s.bind(8, q.tenant);
  s.bind(9, q.peer);
  s.bind(10, q.start_ns);
  s.bind(11, q.end_ns);
  bind_ns(s, 12, q.first_byte_ns);
  bind_ns(s, 13, q.first_token_ns);
  bind_ns(s, 14, q.last_byte_ns);
  s.bind_opt(15, q.ttft_ns);
  s.bind_opt(16, q.e2e_ns);
  s.bind_opt(17, q.itl_max_ns);
  if (q.itl_us.empty()) s.bind_null(18);
  else s.bind(18, q.itl_us);
  s.bind(19, int64_t{q.status});
  s.bind(20, static_cast<int64_t>(q.prompt_bytes));
  s.bind(21, static_cast<int64_t>(q.response_bytes));
  s.bind(22, int64_t{q.streamed});
  s.bind(23, int64_t{q.events});
  s.bind(24, int64_t{q.complete});
  s.bind(25, int64_t{q.tls});
  if (q.model.empty()) s.bind_null(26);
  else s.bind(26, q.model);
  s.bind_opt(27, q.max_tokens);
  s.bind_opt(28, q.input_tokens);
  s.bind_opt(29, q.output_tokens);
  s.bind_opt(30, q.tpot_ns);
  s.bind(31, int64_t{q.content_events});
  s.bind(32, q.end_reason);
  bind_ns(s, 33, q.read_end_ns);  // arrival (docs/INFERENCE.md "Arrival time")
  s.bind_opt(34, q.api_wait_ns);
  return finish_meta(s);
}

// A meta row that breaks a constraint is skipped (as an upsert it should not); any other
// failure (a full disk) fails the batch.
int finish_meta(Statement& s) {
  int rc = s.step();
  s.reset();
  return (rc & 0xff) == SQLITE_CONSTRAINT ? SQLITE_DONE : rc;
}

// Pseudo-ops of the context rows, rolled up per second like calls (bpf/events.h).
constexpr uint16_t kSchedSwitchOp = 400;  // CW_OP_SCHED_SWITCH
constexpr uint16_t kSchedWakeupOp = 401;  // CW_OP_SCHED_WAKEUP

}  // namespace

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
  if (thread_.joinable()) (void)close(now_ns());
}

Result<void> StoreWriter::prepare_statements() {
  sqlite3* h = db_.get();
  struct Spec {
    Statement* stmt;
    const char* sql;
  };
  const std::string one_event = event_insert_sql(1), event_group = event_insert_sql(kEventsPerInsert);
  Spec specs[] = {
      {&ins_event_, one_event.c_str()},
      {&ins_events_, event_group.c_str()},
      {&ins_sched_,
       "INSERT INTO sched (session_id, ts_ns, cpu, prev_tid, prev_pid, prev_prio, prev_state, next_tid, next_pid, "
       "next_prio) VALUES (?,?,?,?,?,?,?,?,?,?)"},
      {&ins_wakeup_,
       "INSERT INTO wakeups (session_id, ts_ns, tid, pid, waker_tid, waker_pid, target_cpu) VALUES (?,?,?,?,?,?,?)"},
      {&ins_rollup_,
       "INSERT INTO rollups (session_id, op_id, pid, sec, count, sum_ns, min_ns, max_ns, errors, hist) "
       "VALUES (?,?,?,?,?,?,?,?,?,?)"},
      // The first parent seen wins: it launched the process; an exit seen after a reparent
      // names the reaper (init or a subreaper) instead.
      {&upsert_process_,
       "INSERT INTO processes (session_id, pid, ppid, comm, cmdline, exe, cgroup_id, container_id, first_ns, "
       "last_ns, exit_code, cgroup_path, rank, world_size, local_rank, rank_source, job_id) "
       "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (session_id, pid) DO UPDATE SET "
       "ppid = coalesce(ppid, excluded.ppid), comm = coalesce(nullif(excluded.comm, ''), comm), "
       "cmdline = coalesce(nullif(excluded.cmdline, ''), cmdline), exe = coalesce(nullif(excluded.exe, ''), exe), "
       "cgroup_id = coalesce(nullif(excluded.cgroup_id, 0), cgroup_id), "
       "container_id = coalesce(nullif(excluded.container_id, ''), container_id), "
       "first_ns = min(coalesce(first_ns, excluded.first_ns), coalesce(excluded.first_ns, first_ns)), "
       "last_ns = max(coalesce(last_ns, excluded.last_ns), coalesce(excluded.last_ns, last_ns)), "
       "exit_code = coalesce(excluded.exit_code, exit_code), "
       "cgroup_path = coalesce(nullif(excluded.cgroup_path, ''), cgroup_path), "
       "rank = coalesce(excluded.rank, rank), world_size = coalesce(excluded.world_size, world_size), "
       "local_rank = coalesce(excluded.local_rank, local_rank), rank_source = coalesce(excluded.rank_source, rank_source), "
       "job_id = coalesce(excluded.job_id, job_id)"},
      {&upsert_thread_,
       "INSERT INTO threads (session_id, tid, pid, comm, cgroup_id) VALUES (?,?,?,?,?) ON CONFLICT (session_id, tid) "
       "DO UPDATE SET pid = excluded.pid, comm = coalesce(nullif(excluded.comm, ''), comm), "
       "cgroup_id = coalesce(excluded.cgroup_id, cgroup_id)"},
      // An id is resolved once per session; a path found later never gives way to "" (gone).
      {&upsert_cgroup_,
       "INSERT INTO cgroups (session_id, cgroup_id, path, container_id, pod) VALUES (?,?,?,?,?) "
       "ON CONFLICT (session_id, cgroup_id) DO UPDATE SET path = excluded.path, container_id = excluded.container_id, "
       "pod = excluded.pod WHERE excluded.path != ''"},
      {&ins_stack_, "INSERT OR IGNORE INTO stacks (id, hash, frames) VALUES (?,?,?)"},
      {&upsert_chain_, kUpsertChainSql},
      {&upsert_call_cause_, kUpsertCallCauseSql},
      {&del_request_chains_, kDeleteRequestChainsSql},
      {&upsert_counter_,
       "INSERT INTO collector_stats (session_id, name, value, updated_ns) VALUES (?,?,?,?) "
       "ON CONFLICT (session_id, name) DO UPDATE SET value = excluded.value, updated_ns = excluded.updated_ns"},
      {&upd_rolled_, "UPDATE sessions SET rolled_up_to_ns = ? WHERE id = ?"},
      {&upd_stopped_, "UPDATE sessions SET stopped_ns = ? WHERE id = ?"},
      {&ins_request_,
       "INSERT INTO requests (session_id, request_id, id_generated, server_pid, fd, method, path, tenant, peer, start_ns, "
       "end_ns, first_byte_ns, first_token_ns, last_byte_ns, ttft_ns, e2e_ns, itl_max_ns, itl_us, status, prompt_bytes, "
       "response_bytes, streamed, events, complete, tls, model, max_tokens, input_tokens, output_tokens, tpot_ns, "
       "content_events, end_reason, read_end_ns, api_wait_ns) "
       "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&ins_engine_sample_,
       "INSERT INTO engine_metrics (session_id, ts_ns, pid, engine, name, labels, value) VALUES (?,?,?,?,?,?,?)"},
      // The engine may be named only once its metrics were read: the latest name wins.
      {&upsert_engine_,
       "INSERT INTO engines (session_id, pid, engine, url) VALUES (?,?,?,?) ON CONFLICT (session_id, pid) DO UPDATE SET "
       "engine = excluded.engine, url = excluded.url WHERE engine != excluded.engine OR url != excluded.url"},
      {&ins_block_,
       "INSERT OR REPLACE INTO event_blocks (session_id, first_id, last_id, min_ts, max_ts, max_end_ns) "
       "VALUES (?,?,?,?,?,?)"},
  };
  for (auto& s : specs) {
    auto st = Statement::prepare(h, s.sql);
    if (!st) return st.error();
    *s.stmt = std::move(*st);
  }
  return {};
}

Result<int64_t> StoreWriter::begin_session(const SessionInfo& info) {
  std::lock_guard db_lock(db_mu_);
  sqlite3* h = db_.get();
  if (auto r = exec_sql(h, "BEGIN IMMEDIATE"); !r) return r.error();
  auto ins = Statement::prepare(h,
                                "INSERT INTO sessions (source_kind, label, host, kernel, gpus, driver_version, "
                                "cuda_version, tool_version, started_ns, system, boot_id, clock_offset_ns) "
                                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ins) return ins.error();
  ins->bind(1, info.source_kind);
  ins->bind(2, info.label);
  ins->bind(3, info.host);
  ins->bind(4, info.kernel);
  ins->bind(5, info.gpus);
  ins->bind(6, info.driver_version);
  ins->bind(7, info.cuda_version);
  ins->bind(8, std::string_view(CAUSEWAY_VERSION));
  ins->bind(9, info.started_ns);
  if (info.system.empty()) ins->bind_null(10);
  else ins->bind(10, info.system);
  if (info.boot_id.empty()) ins->bind_null(11);
  else ins->bind(11, info.boot_id);
  if (info.clock_offset_ns) ins->bind(12, *info.clock_offset_ns);
  else ins->bind_null(12);
  if (ins->step() != SQLITE_DONE) {
    std::string e = sqlite_error_text(h);
    (void)exec_sql(h, "ROLLBACK");
    return make_error("db_write", "cannot start a session in " + path_ + ": " + e);
  }
  session_id_ = sqlite3_last_insert_rowid(h);
  // The catalog as this binary knows it: a DB made by an older one gains the newer fields and
  // layouts (an arg a newer binary decodes reads 0 in an older session's rows).
  auto op = Statement::prepare(h,
                               "INSERT INTO ops (id, source, name, kind, arg_names, family) VALUES (?,?,?,?,?,?) "
                               "ON CONFLICT DO UPDATE SET family = excluded.family, arg_names = excluded.arg_names");
  if (!op) return op.error();
  for (const OpInfo& o : op_catalog()) {
    op->bind(1, int64_t{o.id});
    op->bind(2, source_name(o.source));
    op->bind(3, o.name);
    op->bind(4, std::string_view(o.is_call ? "call" : "event"));
    op->bind(5, o.arg_names);
    op->bind(6, family_name(o.family));
    op->step();
    op->reset();
  }
  if (auto r = exec_sql(h, "COMMIT"); !r) return r.error();
  rolled_up_to_ns_ = info.started_ns;
  thread_ = std::thread([this] { run(); });
  return session_id_;
}

Result<uint16_t> StoreWriter::ensure_op(const std::string& source, const std::string& name, bool is_call,
                                        const std::string& arg_names) {
  std::lock_guard db_lock(db_mu_);
  sqlite3* h = db_.get();
  auto find = Statement::prepare(h, "SELECT id FROM ops WHERE source = ? AND name = ?");
  if (!find) return find.error();
  find->bind(1, source);
  find->bind(2, name);
  if (find->step() == SQLITE_ROW) {
    auto id = static_cast<uint16_t>(find->col_int(0));
    known_ops_[id] = 1;
    return id;
  }
  // Imported ops take ids from 10000 up, clear of the fixed catalog.
  auto next = query_int(h, "SELECT max(10000, coalesce(max(id) + 1, 10000)) FROM ops");
  if (!next) return next.error();
  int64_t id = next->value_or(10000);
  if (id > 65535) return make_error("db_write", "too many distinct ops (more than 55,535 imported names)");
  auto ins = Statement::prepare(h, "INSERT INTO ops (id, source, name, kind, arg_names) VALUES (?,?,?,?,?)");
  if (!ins) return ins.error();
  ins->bind(1, id);
  ins->bind(2, source);
  ins->bind(3, name);
  ins->bind(4, std::string_view(is_call ? "call" : "event"));
  ins->bind(5, arg_names);
  if (ins->step() != SQLITE_DONE) return make_error("db_write", "cannot add op " + name + ": " + sqlite_error_text(h));
  known_ops_[id] = 1;
  return static_cast<uint16_t>(id);
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
  if (queued - inflight_rows_ >= options_.batch_rows) wake_writer_.notify_one();
}

template <typename R>
bool StoreWriter::push_or_drop(const R& r, RecordLane<R>& lane) {
  std::lock_guard lock(mu_);
  if (queued_rows() >= options_.queue_capacity) {
    if constexpr (std::is_same_v<R, CallRecord>) count_lost(r.op, 1);
    else count_lost(std::is_same_v<R, SwitchRecord> ? kSchedSwitchOp : kSchedWakeupOp, 1);
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
  inflight_rows_ = b.rows;
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
}

void StoreWriter::set_counter(const std::string& name, int64_t value) {
  std::lock_guard lock(mu_);
  counters_[name] = value;
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
      wake_writer_.wait_for(lock, interval, [&] {
        return stop_ || flush_requested_ || room_wanted_ || queued_rows() >= options_.batch_rows;
      });
      stopping = stop_;
      flush_requested_ = false;
      room_wanted_ = false;
      batch = take_batch();
      seq = enqueued_seq_;
    }
    Result<void> r = write_batch(batch, stopping);
    if (!r) on_write_failure(batch, stopping, r.error());
    {
      std::lock_guard lock(mu_);
      recycle(batch);
      committed_seq_ = seq;
    }
    batch_done_.notify_all();
    if (stopping) {
      std::lock_guard lock(mu_);
      if (queued_rows() == 0 && meta_.empty()) return;
    }
  }
}

void StoreWriter::accumulate(uint16_t op, uint32_t pid, int64_t ts_ns, int64_t dur_ns, bool error) {
  RollupAcc& acc = batch_rollups_[RollupKey{floor_sec(ts_ns), op, pid}];
  uint64_t d = dur_ns > 0 ? static_cast<uint64_t>(dur_ns) : 0;
  ++acc.count;
  acc.sum += d;
  acc.min = std::min(acc.min, d);
  acc.max = std::max(acc.max, d);
  acc.errors += error ? 1 : 0;
  acc.hist.add(d);
}

void StoreWriter::RollupAcc::merge(const RollupAcc& o) {
  count += o.count;
  sum += o.sum;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  errors += o.errors;
  hist.merge(o.hist);
}

template <typename R, typename Bind>
int StoreWriter::insert_lane(const std::vector<std::vector<R>>& chunks, Statement& s, uint16_t rollup_op,
                             uint64_t& written, Bind bind) {
  for (const auto& chunk : chunks)
    for (const R& r : chunk) {
      const uint32_t pid = bind(s, r);
      int rc = s.step();
      sqlite3_reset(s.get());
      if (rc != SQLITE_DONE) return rc;
      ++written;
      batch_max_ts_ = std::max(batch_max_ts_, r.ts_ns);
      accumulate(rollup_op, pid, r.ts_ns, 0, false);
    }
  return SQLITE_DONE;
}

bool StoreWriter::disk_has_room() const {
  auto fs = fs_room(path_);
  return !fs || fs->free >= fs->floor;
}

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
  if (r) return r;
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
  batch_max_ts_ = max_ts_seen_;
  batch_written_ = 0;
  auto r = in_transaction([&] { return write_batch_rows(batch, final_flush); });
  if (!r) {
    batch_rollups_.clear();  // those rows were not stored
    return r;
  }
  commit_rollups();
  bool recovered = false;
  {
    std::lock_guard lock(mu_);
    stats_.written += batch_written_;
    ++stats_.transactions;
    if (batch.rows > 0) health_.stored_at_ns = steady_ns();
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
  sqlite3* h = db_.get();
  uint64_t written = 0;
  int rc = SQLITE_DONE;
  const int64_t sid = session_id_;
  auto failed = [&] { return make_error("db_write", sqlite_error_text(h)); };

  for (const MetaRecord& m : batch.meta)
    if (rc = write_meta(m); rc != SQLITE_DONE) return failed();

  struct {
    int64_t first_id = 0, last_id = 0, min_ts = INT64_MAX, max_ts = INT64_MIN, max_end = INT64_MIN;
  } block;  // this batch's entry in the event_blocks zone map

  for (const auto& chunk : batch.calls) {
    for (size_t i = 0; i < chunk.size();) {
      const int group = chunk.size() - i >= kEventsPerInsert ? kEventsPerInsert : 1;
      Statement& s = group > 1 ? ins_events_ : ins_event_;
      for (int r = 0; r < group; ++r) bind_event(s, r * kEventInsertColumns, sid, chunk[i + r]);
      rc = s.step();
      sqlite3_reset(s.get());
      if (rc != SQLITE_DONE) return failed();
      // One INSERT's rows take consecutive rowids, the last being last_insert_rowid.
      const int64_t last = sqlite3_last_insert_rowid(h);
      if (block.first_id == 0) block.first_id = last - group + 1;
      block.last_id = last;
      for (int r = 0; r < group; ++r) {
        const CallRecord& c = chunk[i + r];
        block.min_ts = std::min(block.min_ts, c.ts_ns);
        block.max_ts = std::max(block.max_ts, c.ts_ns);
        block.max_end = std::max(block.max_end, c.ts_ns + c.dur_ns);
        batch_max_ts_ = std::max(batch_max_ts_, c.ts_ns);
        accumulate(c.op, c.pid, c.ts_ns, c.dur_ns, c.ret != 0);
      }
      written += static_cast<uint64_t>(group);
      i += static_cast<size_t>(group);
    }
  }
  if (block.first_id != 0) {
    Statement& s = ins_block_;
    s.bind(1, sid);
    s.bind(2, block.first_id);
    s.bind(3, block.last_id);
    s.bind(4, block.min_ts);
    s.bind(5, block.max_ts);
    s.bind(6, block.max_end);
    rc = s.step();
    sqlite3_reset(s.get());
    if (rc != SQLITE_DONE) return failed();
  }
  rc = insert_lane(batch.switches, ins_sched_, kSchedSwitchOp, written, [&](Statement& s, const SwitchRecord& w) {
    s.bind(1, sid);
    s.bind(2, w.ts_ns);
    s.bind(3, int64_t{w.cpu});
    s.bind(4, int64_t{w.prev_tid});
    s.bind(5, int64_t{w.prev_pid});
    s.bind(6, int64_t{w.prev_prio});
    s.bind(7, w.prev_state);
    s.bind(8, int64_t{w.next_tid});
    s.bind(9, int64_t{w.next_pid});
    s.bind(10, int64_t{w.next_prio});
    return w.prev_pid;
  });
  if (rc != SQLITE_DONE) return failed();
  rc = insert_lane(batch.wakeups, ins_wakeup_, kSchedWakeupOp, written, [&](Statement& s, const WakeupRecord& w) {
    s.bind(1, sid);
    s.bind(2, w.ts_ns);
    s.bind(3, int64_t{w.tid});
    s.bind(4, int64_t{w.pid});
    s.bind(5, int64_t{w.waker_tid});
    s.bind(6, int64_t{w.waker_pid});
    s.bind(7, int64_t{w.target_cpu});
    return w.pid;
  });
  if (rc != SQLITE_DONE) return failed();
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
    if (switches) stats_.dropped_by_op[kSchedSwitchOp] += switches;
    if (wakeups) stats_.dropped_by_op[kSchedWakeupOp] += wakeups;
    stats_.dropped_writer += batch.rows;
    stats_.dropped_write_error += batch.rows;
    ++stats_.failed_writes;
    // Process, thread, stack and chain rows are few and events refer to them: they wait for
    // the next batch, unless there is none (stopping) or never will be (the DB is gone).
    if (!stopping && write_fault_may_clear(f)) {
      meta_.insert(meta_.begin(), std::make_move_iterator(batch.meta.begin()), std::make_move_iterator(batch.meta.end()));
    } else {
      stats_.dropped_meta += batch.meta.size();
    }
    batch.meta.clear();
    health_.fault = f;
    health_.last_fault = f;
    health_.error = error.message;
    health_.ever_failed = true;
    if (health_.failing_since_ns == 0) health_.failing_since_ns = steady_ns();
    fault_.store(f, std::memory_order_relaxed);
  }
  if (!write_fault_may_clear(f)) return;
  std::lock_guard db_lock(db_mu_);
  if (f == WriteFault::disk_full && options_.max_db_bytes > 0) (void)prune_if_needed(true);
  // Once a second: each record commits a few WAL frames, and on a full disk it lives off the
  // frames the failed batch left past the last commit (reused, the file does not grow). The
  // lock's reserve is kept for the final record.
  const int64_t now = steady_ns();
  if (now - last_loss_record_ns_ < kNsPerSec) return;
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

int StoreWriter::write_meta(const MetaRecord& m) {
  const int64_t sid = session_id_;
  if (auto* p = std::get_if<ProcessRecord>(&m)) {
    Statement& s = upsert_process_;
    s.bind(1, sid);
    s.bind(2, int64_t{p->pid});
    if (p->ppid) s.bind(3, int64_t{*p->ppid});
    else s.bind_null(3);
    s.bind(4, p->comm);
    s.bind(5, p->cmdline);
    s.bind(6, p->exe);
    s.bind(7, static_cast<int64_t>(p->cgroup_id));
    s.bind(8, p->container_id);
    if (p->first_ns) s.bind(9, p->first_ns);
    else s.bind_null(9);
    if (p->last_ns) s.bind(10, p->last_ns);
    else s.bind_null(10);
    s.bind_opt(11, p->exit_code);
    if (p->cgroup_path.empty()) s.bind_null(12);
    else s.bind(12, p->cgroup_path);
    if (const auto& r = p->launcher_rank) {
      s.bind(13, int64_t{r->rank});
      s.bind(14, int64_t{r->world_size});
      if (r->local_rank) s.bind(15, int64_t{*r->local_rank});
      else s.bind_null(15);
      s.bind(16, r->source);
      s.bind(17, r->job_id);
    } else {
      for (int i = 13; i <= 17; ++i) s.bind_null(i);
    }
    return finish_meta(s);
  } else if (auto* t = std::get_if<ThreadRecord>(&m)) {
    Statement& s = upsert_thread_;
    s.bind(1, sid);
    s.bind(2, int64_t{t->tid});
    s.bind(3, int64_t{t->pid});
    s.bind(4, t->comm);
    if (t->cgroup_id) s.bind(5, static_cast<int64_t>(t->cgroup_id));
    else s.bind_null(5);
    return finish_meta(s);
  } else if (auto* g = std::get_if<CgroupRecord>(&m)) {
    Statement& s = upsert_cgroup_;
    s.bind(1, sid);
    s.bind(2, static_cast<int64_t>(g->id));
    s.bind(3, g->path);
    if (g->container_id.empty()) s.bind_null(4);
    else s.bind(4, g->container_id);
    if (g->pod.empty()) s.bind_null(5);
    else s.bind(5, g->pod);
    return finish_meta(s);
  } else if (auto* st = std::get_if<StackRecord>(&m)) {
    Statement& s = ins_stack_;
    s.bind(1, static_cast<int64_t>(st->hash));
    s.bind(2, static_cast<int64_t>(st->hash));
    s.bind(3, nlohmann::json(st->frames).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return finish_meta(s);
  } else if (auto* c = std::get_if<ChainRecord>(&m)) {
    Statement& s = upsert_chain_;
    bind_chain(s, sid, now_ns(), *c);
    return finish_meta(s);
  } else if (auto* cc = std::get_if<CallCausesRecord>(&m)) {
    Statement& s = upsert_call_cause_;
    for (const CallCauseRecord& row : cc->rows) {
      bind_call_cause(s, sid, row);
      if (int rc = finish_meta(s); rc != SQLITE_DONE) return rc;
    }
  } else if (auto* rc = std::get_if<RequestChainsRecord>(&m)) {
    Statement& d = del_request_chains_;
    d.bind(1, sid);
    d.bind(2, request_chain_id_prefix(sid));
    if (int rc_del = finish_meta(d); rc_del != SQLITE_DONE) return rc_del;
    Statement& s = upsert_chain_;
    for (const ChainRecord& c : rc->chains) {
      bind_chain(s, sid, now_ns(), c);
      if (int rc_ins = finish_meta(s); rc_ins != SQLITE_DONE) return rc_ins;
    }
  } else if (auto* q = std::get_if<RequestRecord>(&m)) {
    return write_request(ins_request_, sid, *q);
  } else if (auto* es = std::get_if<EngineSampleRecord>(&m)) {
    Statement& e = upsert_engine_;
    e.bind(1, sid);
    e.bind(2, int64_t{es->pid});
    e.bind(3, es->engine);
    e.bind(4, es->url);
    if (int rc = finish_meta(e); rc != SQLITE_DONE) return rc;
    Statement& s = ins_engine_sample_;
    for (const EngineSampleRecord::Sample& x : es->samples) {
      s.bind(1, sid);
      s.bind(2, es->ts_ns);
      s.bind(3, int64_t{es->pid});
      s.bind(4, es->engine);
      s.bind(5, x.name);
      s.bind(6, x.labels);
      s.bind(7, x.value);
      if (int rc = finish_meta(s); rc != SQLITE_DONE) return rc;
    }
  } else if (auto* hm = std::get_if<HostContextMark>(&m)) {
    // Not in counters_: write_counters() snapshots those after the batch was taken, which
    // could store a mark ahead of the rows it vouches for.
    Statement& s = upsert_counter_;
    s.bind(1, sid);
    s.bind(2, std::string(kHostContextCounter));
    s.bind(3, hm->host_context_ns);
    s.bind(4, now_ns());
    return finish_meta(s);
  }
  return SQLITE_DONE;
}

Result<void> StoreWriter::flush_rollups(int64_t before_ns) {
  // Only whole seconds strictly before the cutoff's second are complete.
  const int64_t cutoff_sec = before_ns == INT64_MAX ? INT64_MAX : floor_sec(before_ns);
  flushed_cutoff_sec_ = cutoff_sec;
  auto insert = [&](const RollupKey& k, const RollupAcc& a) -> Result<void> {
    Statement& s = ins_rollup_;
    s.bind(1, session_id_);
    s.bind(2, int64_t{k.op});
    s.bind(3, int64_t{k.pid});
    s.bind(4, k.sec);
    s.bind(5, static_cast<int64_t>(a.count));
    s.bind(6, static_cast<int64_t>(a.sum));
    s.bind(7, static_cast<int64_t>(a.min));
    s.bind(8, static_cast<int64_t>(a.max));
    s.bind(9, static_cast<int64_t>(a.errors));
    std::string blob = a.hist.encode();
    s.bind_blob(10, blob.data(), blob.size());
    int rc = s.step();
    sqlite3_reset(s.get());
    if (rc != SQLITE_DONE) return make_error("db_write", "writing rollups failed: " + sqlite_error_text(db_.get()));
    return {};
  };
  // Both maps are ordered by second first: walk the complete seconds of the two together.
  auto c = rollups_.begin();
  auto b = batch_rollups_.begin();
  for (;;) {
    const bool in_c = c != rollups_.end() && c->first.sec < cutoff_sec;
    const bool in_b = b != batch_rollups_.end() && b->first.sec < cutoff_sec;
    Result<void> r;
    if (in_c && in_b && c->first == b->first) {
      RollupAcc both = c->second;
      both.merge(b->second);
      r = insert(c->first, both);
      ++c, ++b;
    } else if (in_c && (!in_b || c->first < b->first)) {
      r = insert(c->first, c->second);
      ++c;
    } else if (in_b) {
      r = insert(b->first, b->second);
      ++b;
    } else {
      break;
    }
    if (!r) return r;
  }
  // After the final flush every second up to the last event's is rolled up.
  batch_rolled_up_to_ns_ =
      std::max(rolled_up_to_ns_, cutoff_sec == INT64_MAX ? (floor_sec(batch_max_ts_) + 1) * kNsPerSec : cutoff_sec * kNsPerSec);
  if (batch_rolled_up_to_ns_ > rolled_up_to_ns_) {
    upd_rolled_.bind(1, batch_rolled_up_to_ns_);
    upd_rolled_.bind(2, session_id_);
    const int rc = upd_rolled_.step();
    upd_rolled_.reset();
    if (rc != SQLITE_DONE) return make_error("db_write", "writing rollups failed: " + sqlite_error_text(db_.get()));
  }
  return {};
}

void StoreWriter::commit_rollups() {
  for (auto& [key, acc] : batch_rollups_) {
    auto [it, fresh] = rollups_.try_emplace(key);
    if (fresh) it->second = std::move(acc);
    else it->second.merge(acc);
  }
  batch_rollups_.clear();
  rollups_.erase(rollups_.begin(), rollups_.lower_bound(RollupKey{flushed_cutoff_sec_, 0, 0}));
  rolled_up_to_ns_ = batch_rolled_up_to_ns_;
  max_ts_seen_ = batch_max_ts_;
}

Result<void> StoreWriter::write_counters(uint64_t written_now) {
  std::map<std::string, int64_t> snapshot;
  {
    std::lock_guard lock(mu_);
    snapshot = counters_;
    snapshot["events_accepted"] = static_cast<int64_t>(stats_.accepted);
    snapshot["events_written"] = static_cast<int64_t>(stats_.written + written_now);
    snapshot["dropped_writer"] = static_cast<int64_t>(stats_.dropped_writer);
    snapshot["dropped_write_error"] = static_cast<int64_t>(stats_.dropped_write_error);
    snapshot["pruned_rows"] = static_cast<int64_t>(stats_.pruned);
    snapshot["writer_queue_peak"] = static_cast<int64_t>(stats_.queue_peak);
    if (health_.ever_failed) {
      snapshot["write_failures"] = static_cast<int64_t>(stats_.failed_writes);
      snapshot["dropped_meta"] = static_cast<int64_t>(stats_.dropped_meta);
    }
    for (const auto& [op, n] : stats_.dropped_by_op) snapshot["dropped_writer." + op_name(op)] = static_cast<int64_t>(n);
  }
  int64_t now = now_ns();
  for (const auto& [name, value] : snapshot) {
    Statement& s = upsert_counter_;
    s.bind(1, session_id_);
    s.bind(2, name);
    s.bind(3, value);
    s.bind(4, now);
    int rc = s.step();
    s.reset();
    if (rc != SQLITE_DONE) return make_error("db_write", "writing counters failed: " + sqlite_error_text(db_.get()));
  }
  return {};
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
  if (auto fs = fs_room(path_)) {
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
    for (Statement* st : {&ins_event_, &ins_events_, &ins_sched_, &ins_wakeup_, &ins_rollup_, &upsert_process_,
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
