// The one writer of the trace DB: a bounded in-memory queue fed by any number of producer
// threads, drained by one writer thread into batched WAL transactions with prepared
// statements. Overflow is counted, never silent; close() flushes everything accepted.
//
// Sizing: the capacity counts rows waiting and rows in the transaction being written, and a
// CallRecord is 104 bytes, so the default 163,840 rows bound the queue at ≈ 16 MiB (in
// 4096-row chunks, tracedb/record_lane.h, allocated only while used) — ≈ 0.33 s of input at
// 500k calls/s, enough to ride out WAL checkpoints on a host whose CPUs the workload fills.
// A live collector that can wait (its events sit in the kernel's ring buffer meanwhile)
// asks room() before it drains, so a full queue slows the drain instead of dropping.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "tracedb/histogram.h"
#include "tracedb/record_lane.h"
#include "tracedb/records.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

struct WriterOptions {
  size_t queue_capacity = 163840;     // rows queued or being written; beyond: dropped, counted
  size_t batch_rows = 65536;          // a transaction starts once this many rows wait (or a producer waits for room)
  int64_t flush_interval_ms = 200;    // readers see data at most this late
  int64_t max_db_bytes = 0;           // 0 = unlimited; else prune oldest raw rows to stay under
  int64_t rollup_lateness_ns = 2'000'000'000;  // a second is rolled up once data is this far past it
};

struct WriterCounters {
  uint64_t accepted = 0;        // records taken into the queue
  uint64_t written = 0;         // rows committed (events + sched + wakeups)
  uint64_t dropped_writer = 0;  // refused because the queue was full
  uint64_t pruned = 0;          // raw rows removed by --max-db
  uint64_t transactions = 0;
  uint64_t queue_peak = 0;      // most rows queued + in flight at once
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

  // Blocks until everything accepted so far is committed.
  void flush();
  // Flushes, writes the remaining rollups, marks the session stopped, closes the DB.
  Result<void> close(int64_t stopped_ns);

  WriterCounters counters() const;
  // First error the writer thread hit (e.g. disk full); empty when none.
  std::string last_error() const;

 private:
  struct Batch {
    std::vector<RecordLane<CallRecord>::Chunk> calls;
    std::vector<RecordLane<SwitchRecord>::Chunk> switches;
    std::vector<RecordLane<WakeupRecord>::Chunk> wakeups;
    std::vector<MetaRecord> meta;
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
  };

  StoreWriter(DbHandle db, std::string path, WriterOptions options);
  template <typename R>
  bool push_or_drop(const R& r, RecordLane<R>& lane);
  template <typename R>
  void push_waiting(const R& r, RecordLane<R>& lane);
  template <typename R>
  void accept(const R& r, RecordLane<R>& lane);  // mu_ held, room checked
  size_t queued_rows() const { return calls_.rows() + switches_.rows() + wakeups_.rows() + inflight_rows_; }
  Batch take_batch();      // mu_ held
  void recycle(Batch& b);  // mu_ held
  Result<void> prepare_statements();
  void run();
  Result<void> write_batch(Batch& batch, bool final_flush);
  // Inserts every row of a context lane; bind(stmt, row) binds it and returns its pid (rollup).
  template <typename R, typename Bind>
  int insert_lane(const std::vector<std::vector<R>>& chunks, Statement& s, uint16_t rollup_op, uint64_t& written,
                  Bind bind);
  void write_meta(const MetaRecord& m);
  void accumulate(uint16_t op, uint32_t pid, int64_t ts_ns, int64_t dur_ns, bool error);
  Result<void> flush_rollups(int64_t before_ns);
  Result<void> write_counters();
  Result<void> prune_if_needed();
  bool op_is_known(uint16_t op);

  DbHandle db_;
  std::string path_;
  WriterOptions options_;
  int64_t session_id_ = 0;

  mutable std::mutex mu_;
  std::condition_variable wake_writer_;
  std::condition_variable batch_done_;
  RecordLane<CallRecord> calls_;
  RecordLane<SwitchRecord> switches_;
  RecordLane<WakeupRecord> wakeups_;
  std::vector<MetaRecord> meta_;
  size_t inflight_rows_ = 0;  // rows of the transaction being written
  uint64_t enqueued_seq_ = 0;   // accepted records + meta, in order
  uint64_t committed_seq_ = 0;
  bool stop_ = false;
  bool flush_requested_ = false;
  bool room_wanted_ = false;  // a producer waits for room: write now, not at batch_rows / the interval
  std::map<std::string, int64_t> counters_;
  WriterCounters stats_;
  std::string last_error_;

  std::mutex db_mu_;  // the connection: writer thread, ensure_op, close
  std::thread thread_;

  // Writer-thread state.
  Statement ins_event_, ins_events_, ins_sched_, ins_wakeup_, ins_rollup_, upsert_process_, upsert_thread_, upsert_cgroup_,
      ins_stack_, upsert_chain_, upsert_call_cause_, upsert_counter_, upd_rolled_, ins_block_;
  std::map<RollupKey, RollupAcc> rollups_;
  int64_t max_ts_seen_ = 0;
  int64_t rolled_up_to_ns_ = 0;
  std::vector<uint8_t> known_ops_;  // by op id: 0 unknown, 1 known
  int64_t last_prune_check_ns_ = 0;
};

}  // namespace causeway
