#include "diagnosis/stacks.h"

#include <charconv>
#include <sstream>

#include "common/sanitize.h"
#include "common/untrusted_json.h"
#include "common/json_exact.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

Result<int64_t> latest_session(sqlite3* db) {
  auto id = query_int(db, "SELECT MAX(id) FROM sessions");
  if (!id) return id.error();
  if (!id.value() || *id.value() == 0)
    return make_error("no_data", "The trace DB holds no session yet: run `causeway trace` or `causeway demo` first.");
  return *id.value();
}

}  // namespace

Result<StacksResult> top_stacks(sqlite3* db, const StackQuery& q) {
  StacksResult out;
  if (q.session_id) {
    out.session_id = *q.session_id;
  } else {
    auto sid = latest_session(db);
    if (!sid) return sid.error();
    out.session_id = sid.value();
  }
  {
    auto st = Statement::prepare(db, "SELECT MIN(ts_ns), MAX(ts_ns + dur_ns) FROM events WHERE session_id = ?");
    if (!st) return st.error();
    st->bind(1, out.session_id);
    if (st->step() == SQLITE_ROW && !st->col_null(0)) {
      out.from_ns = st->col_int(0);
      out.to_ns = st->col_int(1);
    }
  }
  if (q.since_ns && out.to_ns - *q.since_ns > out.from_ns) out.from_ns = out.to_ns - *q.since_ns;

  // One filter text for both queries; ?1 session, ?2 from, ?3 op, ?4 pid (NULL = any).
  const std::string filter =
      " FROM events e JOIN ops o ON o.id = e.op_id"
      " WHERE e.session_id = ?1 AND e.ts_ns >= ?2 AND o.kind = 'call'"
      " AND (?3 IS NULL OR o.name = ?3) AND (?4 IS NULL OR e.pid = ?4)";
  auto bind_filter = [&](Statement& s) {
    s.bind(1, out.session_id);
    s.bind(2, out.from_ns);
    if (q.op) s.bind(3, *q.op); else s.bind_null(3);
    if (q.pid) s.bind(4, int64_t{*q.pid}); else s.bind_null(4);
  };

  // Aggregate first, then look frames up once per result row.
  auto st = Statement::prepare(db,
      "SELECT g.stack_id, g.source, g.name, g.calls, g.total, g.mx, g.errs, g.pids, s.frames FROM ("
      " SELECT e.stack_id AS stack_id, o.source AS source, o.name AS name, COUNT(*) AS calls,"
      " SUM(e.dur_ns) AS total, MAX(e.dur_ns) AS mx, SUM(e.ret != 0) AS errs,"
      " group_concat(DISTINCT e.pid) AS pids" + filter +
      " AND e.stack_id IS NOT NULL GROUP BY e.stack_id, e.op_id ORDER BY total DESC, stack_id, name LIMIT ?5 OFFSET ?6) g"
      " LEFT JOIN stacks s ON s.id = g.stack_id ORDER BY g.total DESC, g.stack_id, g.name");
  if (!st) return st.error();
  bind_filter(*st);
  st->bind(5, static_cast<int64_t>(q.limit + 1));
  st->bind(6, static_cast<int64_t>(q.offset));
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    if (out.stacks.size() == q.limit) {
      out.truncated = true;
      break;
    }
    StackEntry e;
    e.stack_id = st->col_int(0);
    e.source = st->col_text(1);
    e.op = st->col_text(2);
    e.calls = static_cast<uint64_t>(st->col_int(3));
    e.total_ns = static_cast<uint64_t>(st->col_int(4));
    e.max_ns = static_cast<uint64_t>(st->col_int(5));
    e.errors = static_cast<uint64_t>(st->col_int(6));
    std::stringstream pids(st->col_text(7));
    for (std::string p; std::getline(pids, p, ',');)
      // A hostile DB may hold text or huge numbers in events.pid: skip what is not a pid.
      if (uint32_t pid = 0; std::from_chars(p.data(), p.data() + p.size(), pid).ec == std::errc()) e.pids.push_back(pid);
    if (!st->col_null(8)) {
      auto frames = parse_untrusted_json_or_null(st->col_text(8));
      std::vector<std::string> texts;
      if (frames.is_array())
        for (const auto& f : frames) texts.push_back(f.is_string() ? f.get<std::string>() : f.dump());
      ParsedStack parsed = parse_stack(texts);
      e.unwind_cut = parsed.cut;
      e.frames = user_first(std::move(parsed.frames));
      if (e.frames.size() > q.max_frames) {
        e.frames.resize(q.max_frames);
        e.frames_cut = true;
      }
    }
    out.stacks.push_back(std::move(e));
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return make_error("query_failed", sqlite_error_text(db));

  auto none = Statement::prepare(db, "SELECT COUNT(*)" + filter + " AND e.stack_id IS NULL");
  if (!none) return none.error();
  bind_filter(*none);
  if (none->step() == SQLITE_ROW) out.calls_without_stack = static_cast<uint64_t>(none->col_int(0));
  return out;
}

nlohmann::json stacks_to_json(const StacksResult& r) {
  nlohmann::json stacks = nlohmann::json::array();
  for (const auto& s : r.stacks) {
    nlohmann::json frames = nlohmann::json::array();
    for (const Frame& f : s.frames) frames.push_back(frame_to_json(f));
    stacks.push_back({{"stack_id", id_json(s.stack_id)},
                      {"source", sanitize_untrusted(s.source, 64)},
                      {"op", sanitize_untrusted(s.op, 128)},
                      {"calls", s.calls},
                      {"total_us", s.total_ns / 1000.0},
                      {"mean_us", s.calls ? s.total_ns / 1000.0 / static_cast<double>(s.calls) : 0.0},
                      {"max_us", s.max_ns / 1000.0},
                      {"errors", s.errors},
                      {"pids", s.pids},
                      {"frames", frames},
                      {"frames_cut", s.frames_cut},
                      {"unwind_cut", s.unwind_cut}});
  }
  return {{"window", {{"from_ns", r.from_ns}, {"to_ns", r.to_ns}}},
          {"session_id", r.session_id},
          {"stacks", std::move(stacks)},
          {"calls_without_stack", r.calls_without_stack},
          {"truncated", r.truncated}};
}

}  // namespace causeway
