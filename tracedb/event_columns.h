// The `events` columns readers select, by name. A reader builds its SELECT list with
// event_select_list() and reads a value with col(EventCol::…), so no column index is written
// by hand and the list cannot drift from the reads (schemas/trace.sql defines the table).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace causeway {

enum class EventCol : int { id, session_id, ts_ns, dur_ns, pid, tid, op_id, cpu, ret, stack_id, a0, a1, a2, a3, a4, a5, count_ };

inline constexpr std::array<std::string_view, static_cast<size_t>(EventCol::count_)> kEventColNames = {
    "id", "session_id", "ts_ns", "dur_ns", "pid", "tid", "op_id", "cpu", "ret", "stack_id",
    "a0", "a1", "a2", "a3", "a4", "a5"};

constexpr int col(EventCol c) { return static_cast<int>(c); }
// Generic argument i (0..5) of a row.
constexpr int arg_col(int i) { return col(EventCol::a0) + i; }

// A subset of the columns, selected and read by name: sql() is the SELECT list, at(c) the
// index of column c in it (-1 when not selected).
template <size_t N>
struct EventColumns {
  std::array<EventCol, N> cols;
  std::string sql() const {
    std::string s;
    for (EventCol c : cols) {
      if (!s.empty()) s += ", ";
      s += kEventColNames[static_cast<size_t>(c)];
    }
    return s;
  }
  constexpr int at(EventCol c) const {
    for (size_t i = 0; i < N; ++i)
      if (cols[i] == c) return static_cast<int>(i);
    return -1;
  }
};

// "id, session_id, ts_ns, …": every column, in EventCol order.
inline std::string event_select_list() {
  std::string s;
  for (std::string_view n : kEventColNames) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

}  // namespace causeway
