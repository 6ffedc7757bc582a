// The `events` columns, listed once in table order (schemas/trace.sql defines the table). The
// writer's INSERT list and bind order (tracedb/event_row.h), every reader's SELECT list and its
// decode come from this list, read by name: no column index is written by hand, and a column
// added here reaches the writer and the readers together.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace causeway {

enum class EventCol : int {
  id, session_id, ts_ns, dur_ns, pid, tid, op_id, cpu, ret, a0, a1, a2, a3, a4, a5, stack_id, cgroup_id, count_
};

struct EventColumn {
  std::string_view name;
  bool nullable;  // may hold NULL (schemas/trace.sql): cpu unknown, no stack, no cgroup id
};

inline constexpr std::array<EventColumn, static_cast<size_t>(EventCol::count_)> kEventColumns = {{
    {"id", false},       {"session_id", false}, {"ts_ns", false}, {"dur_ns", false}, {"pid", false},     {"tid", false},
    {"op_id", false},    {"cpu", true},         {"ret", false},   {"a0", true},      {"a1", true},       {"a2", true},
    {"a3", true},        {"a4", true},          {"a5", true},     {"stack_id", true}, {"cgroup_id", true},
}};

constexpr int col(EventCol c) { return static_cast<int>(c); }
constexpr std::string_view col_name(EventCol c) { return kEventColumns[static_cast<size_t>(c)].name; }
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
      s += col_name(c);
    }
    return s;
  }
  constexpr int at(EventCol c) const {
    for (size_t i = 0; i < N; ++i)
      if (cols[i] == c) return static_cast<int>(i);
    return -1;
  }
};

// Every column, in EventCol order: the SELECT list of event_select_list().
inline constexpr EventColumns<static_cast<size_t>(EventCol::count_)> kAllEventColumns = [] {
  EventColumns<static_cast<size_t>(EventCol::count_)> all{};
  for (int c = 0; c < col(EventCol::count_); ++c) all.cols[static_cast<size_t>(c)] = static_cast<EventCol>(c);
  return all;
}();

// Every column from `first` on, in EventCol order ("id, session_id, ts_ns, …" from id): read
// back with col(EventCol::…) - col(first).
inline std::string event_column_list(EventCol first = EventCol::id) {
  std::string s;
  for (int c = col(first); c < col(EventCol::count_); ++c) {
    if (!s.empty()) s += ", ";
    s += kEventColumns[static_cast<size_t>(c)].name;
  }
  return s;
}

// "id, session_id, ts_ns, …": every column, in EventCol order (read with col(EventCol::…)).
inline std::string event_select_list() { return event_column_list(EventCol::id); }

}  // namespace causeway
