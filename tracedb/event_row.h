// A call (CallRecord) as an `events` row, column by column of the one list in
// tracedb/event_columns.h: the value the writer binds for each column, the INSERT statement
// built from the same list, and the reader's decode of any SELECTed subset. A column added to
// the list and to event_value()/set_event_value() is written and read back everywhere.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "tracedb/event_columns.h"
#include "tracedb/multi_row_insert.h"
#include "tracedb/records.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// One stored event: its rowid, its session and the call.
struct EventRow {
  int64_t id = 0;
  int64_t session_id = 0;
  CallRecord call;
};

// The value call `e` of session `sid` stores in column c; nullopt is NULL: an unknown CPU, no
// stack, no cgroup id. Arguments are always stored (0 is a real value: rank 0, stream 0, and
// costs no more than NULL in SQLite's record format). The rowid is SQLite's (nullopt).
constexpr std::optional<int64_t> event_value(EventCol c, int64_t sid, const CallRecord& e) {
  switch (c) {
    case EventCol::id: return std::nullopt;
    case EventCol::session_id: return sid;
    case EventCol::ts_ns: return e.ts_ns;
    case EventCol::dur_ns: return e.dur_ns;
    case EventCol::pid: return int64_t{e.pid};
    case EventCol::tid: return int64_t{e.tid};
    case EventCol::op_id: return int64_t{e.op};
    case EventCol::cpu: return e.cpu >= 0 ? std::optional<int64_t>(e.cpu) : std::nullopt;
    case EventCol::ret: return e.ret;
    case EventCol::a0: case EventCol::a1: case EventCol::a2: case EventCol::a3: case EventCol::a4: case EventCol::a5:
      return e.a[static_cast<size_t>(col(c) - col(EventCol::a0))];
    case EventCol::stack_id: return e.stack_hash ? std::optional<int64_t>(static_cast<int64_t>(e.stack_hash)) : std::nullopt;
    case EventCol::cgroup_id: return e.cgroup_id ? std::optional<int64_t>(static_cast<int64_t>(e.cgroup_id)) : std::nullopt;
    case EventCol::count_: break;
  }
  return std::nullopt;
}

// The reverse of event_value(): column c read back into `row` (NULL: the field's "none").
constexpr void set_event_value(EventCol c, EventRow& row, std::optional<int64_t> v) {
  CallRecord& e = row.call;
  const int64_t x = v.value_or(0);
  switch (c) {
    case EventCol::id: row.id = x; break;
    case EventCol::session_id: row.session_id = x; break;
    case EventCol::ts_ns: e.ts_ns = x; break;
    case EventCol::dur_ns: e.dur_ns = x; break;
    case EventCol::pid: e.pid = static_cast<uint32_t>(x); break;
    case EventCol::tid: e.tid = static_cast<uint32_t>(x); break;
    case EventCol::op_id: e.op = static_cast<uint16_t>(x); break;
    case EventCol::cpu: e.cpu = v ? static_cast<int32_t>(x) : -1; break;
    case EventCol::ret: e.ret = x; break;
    case EventCol::a0: case EventCol::a1: case EventCol::a2: case EventCol::a3: case EventCol::a4: case EventCol::a5:
      e.a[static_cast<size_t>(col(c) - col(EventCol::a0))] = x;
      break;
    case EventCol::stack_id: e.stack_hash = static_cast<uint64_t>(x); break;
    case EventCol::cgroup_id: e.cgroup_id = static_cast<uint64_t>(x); break;
    case EventCol::count_: break;
  }
}

// The writer inserts every column but the rowid: session_id … cgroup_id, in list order.
inline constexpr EventCol kFirstInsertCol = EventCol::session_id;
inline constexpr int kEventInsertColumns = col(EventCol::count_) - col(kFirstInsertCol);

// "INSERT INTO events (session_id, …, cgroup_id) VALUES (?,…),(?,…)…" for `rows` rows.
inline std::string event_insert_sql(int rows) {
  return "INSERT INTO events (" + event_column_list(kFirstInsertCol) + ") VALUES " +
         values_rows_sql(kEventInsertColumns, rows);
}

namespace detail {
template <size_t... I>
inline void bind_event_columns(Statement& s, int base, int64_t sid, const CallRecord& e, std::index_sequence<I...>) {
  // Unrolled at compile time: each column's switch folds away on the writer's hot path.
  ((void)[&] {
     constexpr EventCol c = static_cast<EventCol>(col(kFirstInsertCol) + static_cast<int>(I));
     if (const auto v = event_value(c, sid, e)) s.bind(base + 1 + static_cast<int>(I), *v);
     else s.bind_null(base + 1 + static_cast<int>(I));
   }(), ...);
}
}  // namespace detail

// Binds call `e` of session `sid` at parameters base+1 … base+kEventInsertColumns of an
// event_insert_sql() statement.
inline void bind_event(Statement& s, int base, int64_t sid, const CallRecord& e) {
  detail::bind_event_columns(s, base, sid, e, std::make_index_sequence<kEventInsertColumns>{});
}

// The columns `cols` selected (in that order) of the current row of q; columns not selected
// keep their defaults.
template <size_t N>
EventRow decode_event(sqlite3_stmt* q, const EventColumns<N>& cols) {
  EventRow row;
  for (size_t i = 0; i < N; ++i) {
    const int k = static_cast<int>(i);
    set_event_value(cols.cols[i], row,
                    sqlite3_column_type(q, k) == SQLITE_NULL ? std::nullopt : std::optional<int64_t>(sqlite3_column_int64(q, k)));
  }
  return row;
}

}  // namespace causeway
