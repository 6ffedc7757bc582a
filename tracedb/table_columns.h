// A table's columns, listed once: the INSERT statement and the parameter number of each column
// both come from the one list, so the writer binds a row by column name and no parameter index
// is written by hand (the `events` table has its own, richer list: tracedb/event_columns.h).
//
//   enum class ThreadCol { session_id, tid, pid, comm, cgroup_id, count_ };
//   inline constexpr TableColumns<ThreadCol> kThreadColumns{"threads", {"session_id", "tid", …}};
//   Statement::prepare(db, kThreadColumns.insert_sql() + " ON CONFLICT …");
//   RowBind<ThreadCol> row(stmt); row.set(ThreadCol::tid, int64_t{t.tid});
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "tracedb/multi_row_insert.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// Col is an enum class of the table's columns in table order, ending in count_.
template <typename Col>
struct TableColumns {
  static constexpr size_t kCount = static_cast<size_t>(Col::count_);
  std::string_view table;
  std::array<std::string_view, kCount> names;  // in Col order

  // "INSERT INTO table (c0, c1, …) VALUES (?,?,…)" over the columns before `end` (all of them
  // by default); `verb` is "INSERT" or "INSERT OR IGNORE" / "INSERT OR REPLACE".
  std::string insert_sql(std::string_view verb = "INSERT", Col end = Col::count_) const {
    return insert_head(verb, end) + values_rows_sql(static_cast<int>(end), 1);
  }
  // The INSERT of `rows` rows of every column (a MultiRowInsert's statement; row r is bound
  // with RowBind(stmt, r)).
  std::string insert_rows_sql(int rows) const {
    return insert_head("INSERT", Col::count_) + values_rows_sql(static_cast<int>(kCount), rows);
  }

 private:
  std::string insert_head(std::string_view verb, Col end) const {
    std::string cols;
    for (size_t i = 0; i < static_cast<size_t>(end); ++i) {
      if (i) cols += ", ";
      cols += names[i];
    }
    return std::string(verb) + " INTO " + std::string(table) + " (" + cols + ") VALUES ";
  }
};

// Binds one row of a statement made by TableColumns<Col>::insert_sql(), column by name; `base`
// is the parameters before the row's (r × the column count for row r of insert_rows_sql()).
template <typename Col>
class RowBind {
 public:
  explicit RowBind(Statement& s, int base = 0) : s_(s), base_(base) {}
  static constexpr int param(Col c) { return static_cast<int>(c) + 1; }

  RowBind& set(Col c, int64_t v) {
    s_.bind(base_ + param(c), v);
    return *this;
  }
  RowBind& set(Col c, double v) {
    s_.bind(base_ + param(c), v);
    return *this;
  }
  RowBind& set(Col c, std::string_view v) {
    s_.bind(base_ + param(c), v);
    return *this;
  }
  RowBind& set_blob(Col c, std::string_view v) {
    s_.bind_blob(base_ + param(c), v.data(), v.size());
    return *this;
  }
  RowBind& null(Col c) {
    s_.bind_null(base_ + param(c));
    return *this;
  }
  template <typename T>
  RowBind& set_opt(Col c, const std::optional<T>& v) {
    if (v) set(c, static_cast<std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>(*v));
    else null(c);
    return *this;
  }
  // 0 is stored as NULL (a time or id not seen).
  RowBind& set_nonzero(Col c, int64_t v) { return v ? set(c, v) : null(c); }
  // "" is stored as NULL.
  RowBind& set_nonempty(Col c, std::string_view v) { return v.empty() ? null(c) : set(c, v); }

 private:
  Statement& s_;
  int base_;
};

}  // namespace causeway
