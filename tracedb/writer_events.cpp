// The writer's event tables: events (calls, from the one column list of
// tracedb/event_columns.h), event_blocks (the zone map: each batch's events, or blocks of a
// fixed row count with WriterOptions::event_block_rows), sched and
// wakeups (the scheduler context), columns listed once and bound by name
// (tracedb/table_columns.h). events, sched and wakeups take many rows per INSERT
// (tracedb/multi_row_insert.h). Every row stored is also rolled up (tracedb/writer_rollups.cpp).
#include <algorithm>

#include "tracedb/event_row.h"
#include "bpf/events.h"
#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

namespace causeway {
namespace writer_events {

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

// The process a context row is rolled up under: the one switched out, the one woken.
uint32_t rollup_pid(const SwitchRecord& w) { return w.prev_pid; }
uint32_t rollup_pid(const WakeupRecord& w) { return w.pid; }

}  // namespace writer_events

Result<void> StoreWriter::prepare_event_statements(sqlite3* h) {
  using namespace writer_events;
  using namespace store_writer_detail;
  if (auto r = ins_events_.prepare(h, kEventInsertColumns, event_insert_sql); !r) return r;
  if (auto r = prepare_into(h, ins_block_, kBlockColumns.insert_sql("INSERT OR REPLACE")); !r) return r;
  if (auto r = ins_sched_.prepare(h, static_cast<int>(kSchedColumns.kCount), [](int n) { return kSchedColumns.insert_rows_sql(n); }); !r)
    return r;
  return ins_wakeup_.prepare(h, static_cast<int>(kWakeupColumns.kCount), [](int n) { return kWakeupColumns.insert_rows_sql(n); });
}

template <typename R, typename Bind>
int StoreWriter::insert_lane(const std::vector<std::vector<R>>& chunks, MultiRowInsert& ins, uint16_t rollup_op,
                             uint64_t& written, Bind bind) {
  return ins.insert(
      chunks, bind,
      [&](int64_t, const R* rows, int n) {
        for (int k = 0; k < n; ++k) {
          const R& r = rows[k];
          batch_max_ts_ = std::max(batch_max_ts_, r.ts_ns);
          accumulate(rollup_op, writer_events::rollup_pid(r), r.ts_ns, 0, false);
        }
        written += static_cast<uint64_t>(n);
        return SQLITE_DONE;
      });
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
  const int64_t sid = session_id_;
  const int64_t block_rows = options_.event_block_rows;
  // The batch's one block, or (block_rows > 0) the laid-out block the rows fall in: written
  // when the next row opens another, and as it stands at the batch's end (INSERT OR REPLACE
  // on its first_id grows it in place in the next batch).
  LaidOutBlocks& laid = batch_laid_out_;
  EventBlock batch_block;
  EventBlock& block = block_rows > 0 ? laid.open : batch_block;
  auto block_of = [&](int64_t id) { return (id - laid.session_first_id) / block_rows; };
  const int rc = ins_events_.insert(
      batch.calls, [&](Statement& s, int base, const CallRecord& c) { bind_event(s, base, sid, c); },
      [&](int64_t first, const CallRecord* rows, int n) {
        if (block_rows > 0 && laid.session_first_id == 0) laid.session_first_id = first;
        for (int r = 0; r < n; ++r) {
          const CallRecord& c = rows[r];
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
        written += static_cast<uint64_t>(n);
        return SQLITE_DONE;
      });
  if (rc != SQLITE_DONE) return rc;
  return block.first_id == 0 ? SQLITE_DONE : upsert_event_block(block);
}

int StoreWriter::write_context_rows(const Batch& batch, uint64_t& written) {
  using namespace writer_events;
  using namespace store_writer_detail;
  const int64_t sid = session_id_;
  int rc = insert_lane(batch.switches, ins_sched_, kSchedSwitchOp, written, [&](Statement& s, int base, const SwitchRecord& w) {
    using C = SchedCol;
    RowBind<C>(s, base)
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
  });
  if (rc != SQLITE_DONE) return rc;
  return insert_lane(batch.wakeups, ins_wakeup_, kSchedWakeupOp, written, [&](Statement& s, int base, const WakeupRecord& w) {
    using C = WakeupCol;
    RowBind<C>(s, base)
        .set(C::session_id, sid)
        .set(C::ts_ns, w.ts_ns)
        .set(C::tid, int64_t{w.tid})
        .set(C::pid, int64_t{w.pid})
        .set(C::waker_tid, int64_t{w.waker_tid})
        .set(C::waker_pid, int64_t{w.waker_pid})
        .set(C::target_cpu, int64_t{w.target_cpu});
  });
}

}  // namespace causeway
