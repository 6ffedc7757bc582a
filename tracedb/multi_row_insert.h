// A table the writer fills at a high row rate (events, sched, wakeups), inserted many rows per
// INSERT statement: the per-statement work (step, transaction check, halt, reset) is then paid
// once per group instead of once per row. For `events` that took the writer from 1.03M to
// 1.45M rows/s in bench_ingest (16 rows a statement: 1.31M); for the scheduler context the
// tracer stores for every traced process (thousands of rows a second) it is most of the
// writer's per-row cost (docs/BENCHMARKS.md "Batched scheduler rows").
//
// Rows go in groups of 64, then of 8 for what is left, then one at a time, in order: the
// rowids they take are the same as one INSERT per row would give them.
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// "(?,?,…),(?,?,…)…": the VALUES list of `rows` rows of `columns` parameters each.
inline std::string values_rows_sql(int columns, int rows) {
  std::string one = "(";
  for (int i = 0; i < columns; ++i) one += i ? ",?" : "?";
  one += ")";
  std::string sql;
  for (int r = 0; r < rows; ++r) sql += r ? "," + one : one;
  return sql;
}

class MultiRowInsert {
 public:
  static constexpr std::array<int, 3> kGroupRows = {64, 8, 1};

  // sql_of(rows): the INSERT of `rows` rows, each binding `columns` parameters in a row.
  template <typename SqlOf>
  Result<void> prepare(sqlite3* h, int columns, SqlOf sql_of) {
    columns_ = columns;
    for (size_t g = 0; g < kGroupRows.size(); ++g) {
      auto st = Statement::prepare(h, sql_of(kGroupRows[g]));
      if (!st) return st.error();
      by_group_[g] = std::move(*st);
    }
    return {};
  }
  void finalize() {
    for (Statement& s : by_group_) s = Statement();
  }

  // Inserts every row of `chunks`, oldest first. bind(stmt, base, row) binds one row at
  // parameters base+1 … base+columns; stored(first_rowid, rows, n) follows each INSERT of the
  // n rows starting at `rows` (their rowids are first_rowid … first_rowid+n-1) and returns
  // SQLITE_DONE to go on. SQLITE_DONE, or the failing step's (or stored's) code.
  template <typename R, typename Bind, typename Stored>
  int insert(const std::vector<std::vector<R>>& chunks, Bind bind, Stored stored) {
    for (const auto& chunk : chunks) {
      for (size_t i = 0; i < chunk.size();) {
        size_t g = 0;
        while (static_cast<size_t>(kGroupRows[g]) > chunk.size() - i) ++g;
        const int n = kGroupRows[g];
        Statement& s = by_group_[g];
        for (int r = 0; r < n; ++r) bind(s, r * columns_, chunk[i + static_cast<size_t>(r)]);
        const int rc = s.step();
        sqlite3_reset(s.get());
        if (rc != SQLITE_DONE) return rc;
        // One INSERT's rows take consecutive rowids, the last being last_insert_rowid.
        const int64_t first = sqlite3_last_insert_rowid(sqlite3_db_handle(s.get())) - n + 1;
        if (const int src = stored(first, &chunk[i], n); src != SQLITE_DONE) return src;
        i += static_cast<size_t>(n);
      }
    }
    return SQLITE_DONE;
  }

 private:
  int columns_ = 0;
  std::array<Statement, kGroupRows.size()> by_group_;
};

}  // namespace causeway
