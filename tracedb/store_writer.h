// The one writer of the trace DB: a bounded in-memory queue fed by any number of producer
// threads, drained by one writer thread into batched WAL transactions with prepared
// statements. Overflow and failed writes are counted per op, never silent; close() flushes
// everything accepted. What happens on a full disk or a deleted DB: docs/COLLECTOR.md "Faults".
//
// Sizing: the capacity counts rows waiting and rows in the transaction being written, and a
// CallRecord is 104 bytes, so the default 163,840 rows bound the queue at ≈ 16 MiB (in
// 4096-row chunks, tracedb/record_lane.h, allocated only while used) — ≈ 0.33 s of input at
// 500k calls/s, enough to ride out WAL checkpoints on a host whose CPUs the workload fills.
// A live collector that can wait (its events sit in the kernel's ring buffer meanwhile)
// asks room() before it drains, so a full queue slows the drain instead of dropping.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "tracedb/aggregated_calls.h"
#include "tracedb/histogram.h"
#include "tracedb/multi_row_insert.h"
#include "tracedb/record_lane.h"
#include "tracedb/records.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"
#include "tracedb/writer_lock.h"

namespace causeway {

struct WriterOptions {
  size_t queue_capacity = 163840;     // rows queued or being written; beyond: dropped, counted
  size_t batch_rows = 65536;          // a transaction starts once this many rows wait (or a producer waits for room)
  int64_t flush_interval_ms = 200;    // readers see data at most this late
  int64_t max_db_bytes = 0;           // 0 = unlimited; else prune oldest raw rows to stay under
  int64_t rollup_lateness_ns = 2'000'000'000;  // a second is rolled up once data is this far past it
  std::string holder = "causeway";    // named to a second writer refused by the lock (writer_lock.h)
  // 0: one event_blocks row per batch (live: whatever the drain gathered). N > 0: blocks of N
  // rows counted from the session's first event, the map rebuild_event_blocks lays out
  // (tracedb/event_blocks.h), built as the rows are written instead of by a second pass over
  // them (demos: docs/BENCHMARKS.md "Demo write").
  int64_t event_block_rows = 0;
};

// Why the writer cannot store rows. Closed set: the trace's messages, exit status and the
// causeway_writer_failing metric are keyed on it.
enum class WriteFault : uint8_t {
  none,
  disk_full,     // SQLITE_FULL, ENOSPC, EDQUOT
  io_error,      // SQLITE_IOERR*
  db_deleted,    // the DB file is gone from its path (never clears)
  db_replaced,   // another file is at the DB's path (never clears)
  write_failed,  // any other SQLite error
};
const char* write_fault_name(WriteFault f);  // "disk_full", "io_error", …
// Space can be freed and a device can come back; a deleted or replaced DB does not.
bool write_fault_may_clear(WriteFault f);

struct WriterCounters {
  uint64_t accepted = 0;             // records taken into the queue
  uint64_t written = 0;              // rows committed (events + sched + wakeups)
  uint64_t dropped_writer = 0;       // rows lost: refused by a full queue, or in a write that failed
  uint64_t dropped_write_error = 0;  // of dropped_writer: in failed writes or while the DB was gone
  uint64_t dropped_meta = 0;         // process/thread/stack/chain rows never stored (DB gone, or failing at close)
  uint64_t failed_writes = 0;        // write transactions that failed
  uint64_t pruned = 0;               // raw rows removed by --max-db
  uint64_t transactions = 0;
  uint64_t queue_peak = 0;           // most rows queued + in flight at once
  std::map<uint16_t, uint64_t> dropped_by_op;  // dropped_writer by op id; sched rows under 400 / 401
};

struct WriterHealth {
  WriteFault fault = WriteFault::none;  // of the last write; none again once one succeeds
  WriteFault last_fault = WriteFault::none;  // of the most recent failure, kept after recovery
  std::string error;                    // the last failure's message
  int64_t failing_since_ns = 0;         // steady clock: first failure of the current run of them
  int64_t stored_at_ns = 0;             // steady clock: the last commit that stored rows
  bool ever_failed = false;
};

class StoreWriter {
 public:
  static Result<std::unique_ptr<StoreWriter>> open(const std::string& path, const WriterOptions& options = {});
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Inserts the session row and the op catalog, then starts the writer thread.
  Result<int64_t> begin_session(const SessionInfo& info);
  int64_t session_id() const { return session_id_; }

  // Adds an op outside the fixed catalog (imports); returns its id (existing or new).
  Result<uint16_t> ensure_op(const std::string& source, const std::string& name, bool is_call,
                             const std::string& arg_names = "");

  // Producers: false / fewer than given when the queue is full (each refusal is counted).
  bool push(const CallRecord& r);
  bool push(const SwitchRecord& r);
  bool push(const WakeupRecord& r);
  size_t push_calls(std::span<const CallRecord> rs);
  void push_meta(MetaRecord r);
  // Calls counted in the kernel, into the rollups (never dropped: one record per (process, op) a second).
  void push_aggregated(AggregatedCallsRecord r);
  // For sources that can wait (demo, import): block while the queue is full instead of
  // dropping, since generating a little later loses nothing.
  void push_wait(const CallRecord& r);
  void push_wait(const SwitchRecord& r);
  void push_wait(const WakeupRecord& r);

  // Rows that can be pushed now without a refusal, out of capacity().
  size_t room() const;
  size_t capacity() const { return options_.queue_capacity; }
  // Waits up to `timeout` for room for `rows` (less if the capacity is smaller); true if there is.
  bool wait_for_room(size_t rows, std::chrono::milliseconds timeout);

  // A pipeline counter stored in collector_stats (e.g. "dropped_ring"); last value wins.
  void set_counter(const std::string& name, int64_t value);

  // Blocks until everything accepted so far is committed or counted as lost.
  void flush();
  // Flushes, writes the remaining rollups and the counters, marks the session stopped,
  // closes the DB. Fails when that last transaction could not be stored (the losses are in
  // counters() either way).
  Result<void> close(int64_t stopped_ns);

  WriterCounters counters() const;
  WriterHealth health() const;
  // Lock-free: the drain loop asks every round.
  WriteFault fault() const { return fault_.load(std::memory_order_relaxed); }

 private:
  struct Batch {
    std::vector<RecordLane<CallRecord>::Chunk> calls;
    std::vector<RecordLane<SwitchRecord>::Chunk> switches;
    std::vector<RecordLane<WakeupRecord>::Chunk> wakeups;
    std::vector<MetaRecord> meta;
    std::vector<AggregatedCallsRecord> aggregated;
    size_t rows = 0;
  };
  struct RollupKey {
    int64_t sec;
    uint16_t op;
    uint32_t pid;
    auto operator<=>(const RollupKey&) const = default;
  };
  struct RollupAcc {
    uint64_t count = 0, sum = 0, min = UINT64_MAX, max = 0, errors = 0;
    LatencyHistogram hist;
    void merge(const RollupAcc& other);
  };

  StoreWriter(WriterDb db, DbWriterLock lock, std::string path, WriterOptions options);
  template <typename R>
  bool push_or_drop(const R& r, RecordLane<R>& lane);
  template <typename R>
  void push_waiting(const R& r, RecordLane<R>& lane);
  template <typename R>
  void accept(const R& r, RecordLane<R>& lane);  // mu_ held, room checked
  size_t queued_rows() const { return calls_.rows() + switches_.rows() + wakeups_.rows() + inflight_rows_; }
  Batch take_batch();      // mu_ held
  // Nothing queued, no counter changed (mu_ held): the writer sleeps until a producer pushes
  // instead of waking each flush interval (docs/COLLECTOR.md "Draining without polling").
  bool nothing_to_write() const;
  void wake_idle_writer();  // mu_ held: a producer's first row after an idle spell
  void recycle(Batch& b);  // mu_ held
  Result<void> prepare_statements();
  // One per table family, in its file: the statements of the tables it writes.
  Result<void> prepare_event_statements(sqlite3* h);    // tracedb/writer_events.cpp
  Result<void> prepare_rollup_statements(sqlite3* h);   // tracedb/writer_rollups.cpp
  Result<void> prepare_process_statements(sqlite3* h);  // tracedb/writer_processes.cpp
  Result<void> prepare_chain_statements(sqlite3* h);    // tracedb/writer_chains.cpp
  Result<void> prepare_request_statements(sqlite3* h);  // tracedb/writer_requests.cpp
  Result<void> prepare_counter_statements(sqlite3* h);  // tracedb/writer_counters.cpp
  Result<void> prepare_session_statements(sqlite3* h);  // tracedb/writer_session.cpp
  void run();
  // One transaction. On failure it is rolled back and nothing in memory changed (rollups
  // included), so the caller can count the batch's rows as lost and nothing else.
  Result<void> write_batch(Batch& batch, bool final_flush);
  Result<void> write_batch_rows(Batch& batch, bool final_flush);  // inside the transaction
  // The failure path (never taken while writes succeed): counts the batch per op, keeps its
  // meta rows for the next batch, and tries to commit the counters so the loss is on record.
  void on_write_failure(Batch& batch, bool stopping, const Error& error);
  // Counters (and, last, the rollups of what was committed and sessions.stopped_ns) in a
  // transaction of their own; on a full disk the lock's reserve is handed back and it is tried once more.
  Result<void> write_record(std::optional<int64_t> stopped_ns);
  WriteFault classify_failure(int sqlite_rc);
  // BEGIN IMMEDIATE, body, COMMIT; on failure sets failure_ and rolls back.
  Result<void> in_transaction(const std::function<Result<void>()>& body);
  WriteFault check_db_file() const;  // db_deleted / db_replaced / none, by the path's inode
  bool disk_has_room() const;        // the file system holding the DB has its prune floor free
  // Inserts every row of a context lane; bind(stmt, base, row) binds one row of a group.
  template <typename R, typename Bind>
  int insert_lane(const std::vector<std::vector<R>>& chunks, MultiRowInsert& ins, uint16_t rollup_op, uint64_t& written,
                  Bind bind);
  // One event_blocks entry being grown: a batch's, or with event_block_rows a laid-out block.
  struct EventBlock {
    int64_t first_id = 0, last_id = 0, min_ts = INT64_MAX, max_ts = INT64_MIN, max_end = INT64_MIN;
    void add(int64_t id, int64_t ts, int64_t end);
  };
  // The laid-out map's open block and the session's first event id (event_block_rows > 0).
  struct LaidOutBlocks {
    int64_t session_first_id = 0;
    EventBlock open;
  };
  // The batch's calls and their event_blocks entries; its sched and wakeup rows. SQLITE_DONE or the error.
  int write_call_rows(const Batch& batch, uint64_t& written);
  int upsert_event_block(const EventBlock& b);
  int write_context_rows(const Batch& batch, uint64_t& written);
  // One meta row, by its kind (each in its table family's file); SQLITE_DONE, or the error
  // that fails the batch (a row breaking a constraint is skipped).
  int write_meta(const MetaRecord& m);
  int write_meta_row(const ProcessRecord& p);
  int write_meta_row(const ThreadRecord& t);
  int write_meta_row(const CgroupRecord& g);
  int write_meta_row(const StackRecord& st);
  int write_meta_row(const ChainRecord& c);
  int write_meta_row(const CallCausesRecord& cc);
  int write_meta_row(const RequestChainsRecord& rc);
  int write_meta_row(const RequestRecord& q);
  int write_meta_row(const EngineSampleRecord& es);
  int write_meta_row(const HostContextMark& hm);
  int upsert_counter(std::string_view name, int64_t value, int64_t now);  // a collector_stats row
  Result<void> insert_rollup(const RollupKey& k, const RollupAcc& a);
  void accumulate(uint16_t op, uint32_t pid, int64_t ts_ns, int64_t dur_ns, bool error);
  // Writes the rollup rows of every second before the cutoff from rollups_ plus the batch's
  // own accumulations, changing nothing in memory; commit_rollups() applies it after COMMIT.
  Result<void> flush_rollups(int64_t before_ns);
  // Counted calls into the batch's rollups (store_writer_aggregated.cpp).
  void accumulate_aggregated(const AggregatedCallsRecord& r);
  void commit_rollups();
  // The counters' values now (mu_ taken): the collector's, then the writer's own.
  std::map<std::string, int64_t> counter_snapshot(uint64_t written_now) const;
  // Upserts the counters whose value differs from the one committed (stored_counters_); they
  // become committed with commit_counters(), after COMMIT.
  Result<void> write_counters(uint64_t written_now);
  bool counters_differ_from_stored() const;
  void commit_counters();
  void count_lost(uint16_t op, uint64_t n);  // mu_ held; failure paths only
  Result<void> prune_if_needed(bool disk_full);
  bool op_is_known(uint16_t op);

  WriterDb db_;  // written as db_.as: on the writer thread and in close() too
  DbWriterLock lock_;
  std::string path_;
  dev_t db_dev_ = 0;  // the DB file as opened: a different inode at path_ later means it was replaced
  ino_t db_ino_ = 0;
  WriterOptions options_;
  int64_t session_id_ = 0;

  mutable std::mutex mu_;
  std::condition_variable wake_writer_;
  std::condition_variable batch_done_;
  RecordLane<CallRecord> calls_;
  RecordLane<SwitchRecord> switches_;
  RecordLane<WakeupRecord> wakeups_;
  std::vector<MetaRecord> meta_;
  std::vector<AggregatedCallsRecord> aggregated_;
  size_t inflight_rows_ = 0;  // rows of the transaction being written
  uint64_t enqueued_seq_ = 0;   // accepted records + meta, in order
  uint64_t committed_seq_ = 0;
  bool stop_ = false;
  bool flush_requested_ = false;
  bool room_wanted_ = false;  // a producer waits for room: write now, not at batch_rows / the interval
  bool writer_idle_ = false;  // the writer sleeps until something is pushed (nothing_to_write)
  std::map<std::string, int64_t> counters_;
  bool counters_changed_ = false;  // a set_counter changed a value since the last batch was taken
  WriterCounters stats_;
  WriterHealth health_;
  std::atomic<WriteFault> fault_{WriteFault::none};

  std::mutex db_mu_;  // the connection: writer thread, ensure_op, close
  std::thread thread_;

  // Writer-thread state.
  MultiRowInsert ins_events_, ins_sched_, ins_wakeup_;
  Statement ins_rollup_, upsert_process_, upsert_thread_, upsert_cgroup_,
      ins_stack_, upsert_chain_, upsert_call_cause_, del_request_chains_, upsert_counter_, upd_rolled_, upd_stopped_, ins_block_, ins_request_,
      ins_engine_sample_, upsert_engine_;
  std::map<RollupKey, RollupAcc> rollups_;        // committed rows not yet rolled up
  std::map<std::string, int64_t> stored_counters_;                  // collector_stats as committed
  std::vector<std::pair<std::string, int64_t>> batch_counters_;     // upserted by the open transaction
  std::map<RollupKey, RollupAcc> batch_rollups_;  // the transaction's rows, merged in on COMMIT
  LaidOutBlocks laid_out_;        // committed (event_block_rows > 0)
  LaidOutBlocks batch_laid_out_;  // the transaction's, kept on COMMIT
  int64_t max_ts_seen_ = 0;
  int64_t batch_max_ts_ = 0;
  int64_t rolled_up_to_ns_ = 0;
  int64_t batch_rolled_up_to_ns_ = 0;  // flush_rollups' mark, kept on COMMIT
  int64_t flushed_cutoff_sec_ = 0;      // seconds before it were written by flush_rollups
  uint64_t batch_written_ = 0;
  int64_t last_loss_record_ns_ = 0;  // steady clock
  WriteFault failure_ = WriteFault::none;  // of the last failed transaction
  WriteFault gone_ = WriteFault::none;     // db_deleted / db_replaced once seen: nothing more is written
  std::vector<uint8_t> known_ops_;  // by op id: 0 unknown, 1 known
  int64_t last_prune_check_ns_ = 0;
};

}  // namespace causeway
