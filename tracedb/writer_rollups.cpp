// The writer's rollups table: per second, op and pid, the count, sum, extremes, errors and
// latency histogram of the rows committed (docs/COLLECTOR.md), columns listed once and bound by
// name (tracedb/table_columns.h). The accumulations of a transaction are merged in only after
// its COMMIT, so a failed write leaves them as they were.
#include <algorithm>

#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

namespace causeway {
namespace writer_rollups {

enum class RollupCol { session_id, op_id, pid, sec, count, sum_ns, min_ns, max_ns, errors, hist, count_ };
inline constexpr TableColumns<RollupCol> kRollupColumns{
    "rollups", {"session_id", "op_id", "pid", "sec", "count", "sum_ns", "min_ns", "max_ns", "errors", "hist"}};

}  // namespace writer_rollups

Result<void> StoreWriter::prepare_rollup_statements(sqlite3* h) {
  return store_writer_detail::prepare_into(h, ins_rollup_, writer_rollups::kRollupColumns.insert_sql());
}

void StoreWriter::accumulate(uint16_t op, uint32_t pid, int64_t ts_ns, int64_t dur_ns, bool error) {
  RollupAcc& acc = batch_rollups_[RollupKey{store_writer_detail::floor_sec(ts_ns), op, pid}];
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

Result<void> StoreWriter::insert_rollup(const RollupKey& k, const RollupAcc& a) {
  using writer_rollups::RollupCol;
  const std::string blob = a.hist.encode();
  RowBind<RollupCol>(ins_rollup_)
      .set(RollupCol::session_id, session_id_)
      .set(RollupCol::op_id, int64_t{k.op})
      .set(RollupCol::pid, int64_t{k.pid})
      .set(RollupCol::sec, k.sec)
      .set(RollupCol::count, static_cast<int64_t>(a.count))
      .set(RollupCol::sum_ns, static_cast<int64_t>(a.sum))
      .set(RollupCol::min_ns, static_cast<int64_t>(a.min))
      .set(RollupCol::max_ns, static_cast<int64_t>(a.max))
      .set(RollupCol::errors, static_cast<int64_t>(a.errors))
      .set_blob(RollupCol::hist, blob);
  int rc = ins_rollup_.step();
  sqlite3_reset(ins_rollup_.get());
  if (rc != SQLITE_DONE) return make_error("db_write", "writing rollups failed: " + sqlite_error_text(db_.get()));
  return {};
}

Result<void> StoreWriter::flush_rollups(int64_t before_ns) {
  using namespace store_writer_detail;
  // Only whole seconds strictly before the cutoff's second are complete.
  const int64_t cutoff_sec = before_ns == INT64_MAX ? INT64_MAX : floor_sec(before_ns);
  flushed_cutoff_sec_ = cutoff_sec;
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
      r = insert_rollup(c->first, both);
      ++c, ++b;
    } else if (in_c && (!in_b || c->first < b->first)) {
      r = insert_rollup(c->first, c->second);
      ++c;
    } else if (in_b) {
      r = insert_rollup(b->first, b->second);
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

}  // namespace causeway
