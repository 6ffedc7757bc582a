// The writer's event tables: events (calls, in multi-row INSERTs from the one column list of
// tracedb/event_columns.h), event_blocks (the zone map: each batch's events, or blocks of a
// fixed row count with WriterOptions::event_block_rows), sched and
// wakeups (the scheduler context), columns listed once and bound by name
// (tracedb/table_columns.h). Every row stored is also rolled up (tracedb/writer_rollups.cpp).
#include <algorithm>

#include "tracedb/event_row.h"
#include "bpf/events.h"
#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

namespace causeway {
namespace writer_events {

// Events go in kEventsPerInsert rows per INSERT: the per-statement work (step, transaction
// check, halt, reset) is then paid once per group instead of once per row, which took the
// writer from 1.03M to 1.45M rows/s in bench_ingest (16 rows: 1.31M) — the margin a live
// trace needs when the traced workload fills the host's CPUs.
constexpr int kEventsPerInsert = 64;

enum class BlockCol { session_id, first_id, last_id, min_ts, max_ts, max_end_ns, count_ };
inline constexpr TableColumns<BlockCol> kBlockColumns{
    "event_blocks", {"session_id", "first_id", "last_id", "min_ts", "max_ts", "max_end_ns"}};

enum class SchedCol {
  session_id, ts_ns, cpu, prev_tid, prev_pid, prev_prio, prev_state, next_tid, next_pid, next_prio, count_
};
inline constexpr TableColumns<SchedCol> kSchedColumns{
    "sched",
    {"session_id", "ts_ns", "cpu", "prev_tid", "prev_pid", "prev_prio", "prev_state", "next_tid", "next_pid",
     "next_prio"}};

enum class WakeupCol { session_id, ts_ns, tid, pid, waker_tid, waker_pid, target_cpu, count_ };
inline constexpr TableColumns<WakeupCol> kWakeupColumns{
    "wakeups", {"session_id", "ts_ns", "tid", "pid", "waker_tid", "waker_pid", "target_cpu"}};

}  // namespace writer_events

Result<void> StoreWriter::prepare_event_statements(sqlite3* h) {
  using namespace writer_events;
  using namespace store_writer_detail;
  if (auto r = prepare_into(h, ins_event_, event_insert_sql(1)); !r) return r;
  if (auto r = prepare_into(h, ins_events_, event_insert_sql(kEventsPerInsert)); !r) return r;
  if (auto r = prepare_into(h, ins_block_, kBlockColumns.insert_sql("INSERT OR REPLACE")); !r) return r;
  if (auto r = prepare_into(h, ins_sched_, kSchedColumns.insert_sql()); !r) return r;
  return prepare_into(h, ins_wakeup_, kWakeupColumns.insert_sql());
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

void StoreWriter::EventBlock::add(int64_t id, int64_t ts, int64_t end) {
  if (first_id == 0) first_id = id;
  last_id = id;
  min_ts = std::min(min_ts, ts);
  max_ts = std::max(max_ts, ts);
  max_end = std::max(max_end, end);
}

int StoreWriter::upsert_event_block(const EventBlock& b) {
  using writer_events::BlockCol;
  RowBind<BlockCol>(ins_block_)
      .set(BlockCol::session_id, session_id_)
      .set(BlockCol::first_id, b.first_id)
      .set(BlockCol::last_id, b.last_id)
      .set(BlockCol::min_ts, b.min_ts)
      .set(BlockCol::max_ts, b.max_ts)
      .set(BlockCol::max_end_ns, b.max_end);
  const int rc = ins_block_.step();
  sqlite3_reset(ins_block_.get());
  return rc;
}

int StoreWriter::write_call_rows(const Batch& batch, uint64_t& written) {
  using namespace writer_events;
  sqlite3* h = db_.get();
  const int64_t sid = session_id_;
  const int64_t block_rows = options_.event_block_rows;
  // The batch's one block, or (block_rows > 0) the laid-out block the rows fall in: written
  // when the next row opens another, and as it stands at the batch's end (INSERT OR REPLACE
  // on its first_id grows it in place in the next batch).
  LaidOutBlocks& laid = batch_laid_out_;
  EventBlock batch_block;
  EventBlock& block = block_rows > 0 ? laid.open : batch_block;
  auto block_of = [&](int64_t id) { return (id - laid.session_first_id) / block_rows; };
  for (const auto& chunk : batch.calls) {
    for (size_t i = 0; i < chunk.size();) {
      const int group = chunk.size() - i >= kEventsPerInsert ? kEventsPerInsert : 1;
      Statement& s = group > 1 ? ins_events_ : ins_event_;
      for (int r = 0; r < group; ++r) bind_event(s, r * kEventInsertColumns, sid, chunk[i + r]);
      const int rc = s.step();
      sqlite3_reset(s.get());
      if (rc != SQLITE_DONE) return rc;
      // One INSERT's rows take consecutive rowids, the last being last_insert_rowid.
      const int64_t first = sqlite3_last_insert_rowid(h) - group + 1;
      if (block_rows > 0 && laid.session_first_id == 0) laid.session_first_id = first;
      for (int r = 0; r < group; ++r) {
        const CallRecord& c = chunk[i + r];
        const int64_t id = first + r;
        if (block_rows > 0 && block.first_id != 0 && block_of(id) != block_of(block.first_id)) {
          if (const int brc = upsert_event_block(block); brc != SQLITE_DONE) return brc;
          block = EventBlock{};
        }
        block.add(id, c.ts_ns, c.ts_ns + c.dur_ns);
        batch_max_ts_ = std::max(batch_max_ts_, c.ts_ns);
        // A thread's run of counted calls is in the rollups already (AggregatedCallsRecord).
        if (c.op != CW_OP_CALLS_AGGREGATED) accumulate(c.op, c.pid, c.ts_ns, c.dur_ns, c.ret != 0);
      }
      written += static_cast<uint64_t>(group);
      i += static_cast<size_t>(group);
    }
  }
  return block.first_id == 0 ? SQLITE_DONE : upsert_event_block(block);
}

int StoreWriter::write_context_rows(const Batch& batch, uint64_t& written) {
  using namespace writer_events;
  using namespace store_writer_detail;
  const int64_t sid = session_id_;
  int rc = insert_lane(batch.switches, ins_sched_, kSchedSwitchOp, written, [&](Statement& s, const SwitchRecord& w) {
    using C = SchedCol;
    RowBind<C>(s)
        .set(C::session_id, sid)
        .set(C::ts_ns, w.ts_ns)
        .set(C::cpu, int64_t{w.cpu})
        .set(C::prev_tid, int64_t{w.prev_tid})
        .set(C::prev_pid, int64_t{w.prev_pid})
        .set(C::prev_prio, int64_t{w.prev_prio})
        .set(C::prev_state, w.prev_state)
        .set(C::next_tid, int64_t{w.next_tid})
        .set(C::next_pid, int64_t{w.next_pid})
        .set(C::next_prio, int64_t{w.next_prio});
    return w.prev_pid;
  });
  if (rc != SQLITE_DONE) return rc;
  return insert_lane(batch.wakeups, ins_wakeup_, kSchedWakeupOp, written, [&](Statement& s, const WakeupRecord& w) {
    using C = WakeupCol;
    RowBind<C>(s)
        .set(C::session_id, sid)
        .set(C::ts_ns, w.ts_ns)
        .set(C::tid, int64_t{w.tid})
        .set(C::pid, int64_t{w.pid})
        .set(C::waker_tid, int64_t{w.waker_tid})
        .set(C::waker_pid, int64_t{w.waker_pid})
        .set(C::target_cpu, int64_t{w.target_cpu});
    return w.pid;
  });
}

}  // namespace causeway
