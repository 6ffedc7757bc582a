#include "tracedb/event_blocks.h"

#include <algorithm>
#include <optional>
#include <string>

#include "tracedb/event_columns.h"

namespace causeway {

namespace {

constexpr EventColumns<3> kLayoutColumns{{EventCol::id, EventCol::ts_ns, EventCol::dur_ns}};

// One block of the laid-out map, grown row by row.
struct LaidOutBlock {
  int64_t first_id = 0, last_id = 0, min_ts = 0, max_ts = 0, max_end = 0;

  void add(int64_t id, int64_t ts, int64_t end) {
    last_id = id;
    min_ts = std::min(min_ts, ts);
    max_ts = std::max(max_ts, ts);
    max_end = std::max(max_end, end);
  }
};

bool insert_laid_out_block(Statement& ins, int64_t session_id, const LaidOutBlock& b) {
  ins.reset();
  ins.bind(1, session_id);
  ins.bind(2, b.first_id);
  ins.bind(3, b.last_id);
  ins.bind(4, b.min_ts);
  ins.bind(5, b.max_ts);
  ins.bind(6, b.max_end);
  return ins.step() == SQLITE_DONE;
}

Error layout_error(sqlite3* db) {
  return make_error("db_write", "laying out the event_blocks zone map: " + std::string(sqlite3_errmsg(db)));
}

}  // namespace

// One pass over the session's rows in id order: the blocks are contiguous id ranges, so no
// GROUP BY, whose sort of every row cost 2.4× this pass (docs/BENCHMARKS.md "Before and
// after the house work").
Result<void> rebuild_event_blocks(sqlite3* db, int64_t session_id, int64_t rows_per_block) {
  if (rows_per_block <= 0) return make_error("usage", "rebuild_event_blocks: rows_per_block must be positive");
  auto del = Statement::prepare(db, "DELETE FROM event_blocks WHERE session_id = ?1");
  auto read = Statement::prepare(db, "SELECT " + kLayoutColumns.sql() + " FROM events WHERE session_id = ?1 ORDER BY id");
  auto ins = Statement::prepare(
      db, "INSERT INTO event_blocks (session_id, first_id, last_id, min_ts, max_ts, max_end_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!del || !read || !ins) return layout_error(db);
  del->bind(1, session_id);
  if (del->step() != SQLITE_DONE) return layout_error(db);
  read->bind(1, session_id);
  // Blocks count from the session's first row, so another session's rows in the same DB move
  // no boundary.
  std::optional<int64_t> session_first;
  std::optional<LaidOutBlock> block;
  int64_t block_key = 0;
  int rc = SQLITE_ROW;
  while ((rc = read->step()) == SQLITE_ROW) {
    const int64_t id = read->col_int(kLayoutColumns.at(EventCol::id));
    const int64_t ts = read->col_int(kLayoutColumns.at(EventCol::ts_ns));
    const int64_t end = ts + read->col_int(kLayoutColumns.at(EventCol::dur_ns));
    if (!session_first) session_first = id;
    const int64_t key = (id - *session_first) / rows_per_block;
    if (block && key != block_key) {
      if (!insert_laid_out_block(*ins, session_id, *block)) break;
      block.reset();
    }
    if (!block) {
      block = LaidOutBlock{.first_id = id, .last_id = id, .min_ts = ts, .max_ts = ts, .max_end = end};
      block_key = key;
    }
    block->add(id, ts, end);
  }
  if (rc != SQLITE_DONE || (block && !insert_laid_out_block(*ins, session_id, *block))) return layout_error(db);
  return {};
}

}  // namespace causeway
