// The writer's collector_stats table: the pipeline's counters (accepted, written, dropped per
// op, pruned, …) and the host-context watermark, columns listed once and bound by name
// (tracedb/table_columns.h).
#include <map>
#include <string>

#include "tracedb/op_catalog.h"
#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

namespace causeway {
namespace writer_counters {

enum class CounterCol { session_id, name, value, updated_ns, count_ };
inline constexpr TableColumns<CounterCol> kCounterColumns{"collector_stats",
                                                          {"session_id", "name", "value", "updated_ns"}};
constexpr const char* kCounterOnConflict =
    " ON CONFLICT (session_id, name) DO UPDATE SET value = excluded.value, updated_ns = excluded.updated_ns";

}  // namespace writer_counters

Result<void> StoreWriter::prepare_counter_statements(sqlite3* h) {
  using namespace writer_counters;
  return store_writer_detail::prepare_into(h, upsert_counter_, kCounterColumns.insert_sql() + kCounterOnConflict);
}

int StoreWriter::upsert_counter(std::string_view name, int64_t value, int64_t now) {
  using writer_counters::CounterCol;
  RowBind<CounterCol>(upsert_counter_)
      .set(CounterCol::session_id, session_id_)
      .set(CounterCol::name, name)
      .set(CounterCol::value, value)
      .set(CounterCol::updated_ns, now);
  const int rc = upsert_counter_.step();
  upsert_counter_.reset();
  return rc;
}

int StoreWriter::write_meta_row(const HostContextMark& hm) {
  // Not in counters_: write_counters() snapshots those after the batch was taken, which
  // could store a mark ahead of the rows it vouches for.
  const int rc = upsert_counter(kHostContextCounter, hm.host_context_ns, store_writer_detail::wall_now_ns());
  return (rc & 0xff) == SQLITE_CONSTRAINT ? SQLITE_DONE : rc;  // as finish_meta()
}

std::map<std::string, int64_t> StoreWriter::counter_snapshot(uint64_t written_now) const {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> snapshot = counters_;
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
  return snapshot;
}

// Only the counters that changed: a trace's ~80 counters upserted in every transaction were
// most of an idle writer's work (docs/COLLECTOR.md "Draining without polling"). A row's
// updated_ns is then when its value last changed.
Result<void> StoreWriter::write_counters(uint64_t written_now) {
  const int64_t now = store_writer_detail::wall_now_ns();
  batch_counters_.clear();
  for (const auto& [name, value] : counter_snapshot(written_now)) {
    if (auto it = stored_counters_.find(name); it != stored_counters_.end() && it->second == value) continue;
    if (upsert_counter(name, value, now) != SQLITE_DONE)
      return make_error("db_write", "writing counters failed: " + sqlite_error_text(db_.get()));
    batch_counters_.emplace_back(name, value);
  }
  return {};
}

bool StoreWriter::counters_differ_from_stored() const {
  for (const auto& [name, value] : counter_snapshot(0))
    if (auto it = stored_counters_.find(name); it == stored_counters_.end() || it->second != value) return true;
  return false;
}

// After COMMIT; a rolled-back transaction leaves collector_stats as stored_counters_ says.
void StoreWriter::commit_counters() {
  for (auto& [name, value] : batch_counters_) stored_counters_[std::move(name)] = value;
  batch_counters_.clear();
}

}  // namespace causeway
