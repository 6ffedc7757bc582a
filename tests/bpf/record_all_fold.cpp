#include "tests/bpf/record_all_fold.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

#include "bpf/events.h"
#include "tracedb/op_catalog.h"
#include "tracedb/op_recording.h"

namespace causeway::test {
namespace {

constexpr int64_t kRunMaxNs = 100'000'000;  // bpf/calls.bpf.h targ_run_max_ns (the collector keeps the default)

struct FoldRow {
  int64_t id, ts, dur;
  uint16_t op;
  int64_t ret;
  bool stacked;
  int parent = -1, depth = 0;
  bool nested_recorded = false;
  bool switched_out = false;  // the thread left its CPU while the call ran (bpf/calls.bpf.h mark_switched_out)
  int64_t end() const { return ts + dur; }
};

struct FoldRun {
  int64_t first_id = 0, first_ts = 0, last_end = 0, calls = 0, ns = 0;
  uint16_t op = 0;
};

void fold_exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("fold_counted_calls: " + m + " in " + sql);
  }
}

// One thread's calls (ts order) → the rows to drop and the runs to store, by the kernel's rule.
void fold_thread(std::vector<FoldRow>& calls, std::vector<int64_t>& drop, std::vector<FoldRun>& runs, int64_t& switched) {
  // Nesting by containment: the kernel's frames, rebuilt from start and end.
  std::vector<int> open;
  for (int i = 0; i < static_cast<int>(calls.size()); ++i) {
    while (!open.empty() && !(calls[i].ts < calls[open.back()].end() && calls[i].end() <= calls[open.back()].end()))
      open.pop_back();
    calls[i].parent = open.empty() ? -1 : open.back();
    calls[i].depth = open.empty() ? 0 : calls[open.back()].depth + 1;
    open.push_back(i);
  }
  // Returns in time order, an inner call before the outer one it ends with.
  std::vector<int> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (calls[a].end() != calls[b].end()) return calls[a].end() < calls[b].end();
    return calls[a].depth > calls[b].depth;
  });
  FoldRun run;
  for (int i : order) {
    FoldRow& c = calls[i];
    bool counted = is_fast_counted_op(c.op) && !c.stacked && c.ret == 0 &&
                   c.dur < static_cast<int64_t>(CW_AGG_MAX_NS) && !c.nested_recorded;
    if (counted && c.depth == 0 && run.calls > 0 && c.end() - run.first_ts >= kRunMaxNs) counted = false;
    if (counted && c.switched_out) {
      ++switched;
      counted = false;
    }
    if (counted) {
      drop.push_back(c.id);
      if (c.depth == 0) {
        if (run.calls == 0) {
          run.first_id = c.id;
          run.first_ts = c.ts;
        }
        ++run.calls;
        run.ns += c.dur;
        run.last_end = c.end();
        run.op = c.op;
      }
      continue;
    }
    if (c.parent >= 0) calls[c.parent].nested_recorded = true;
    if (c.depth == 0 && run.calls > 0) {
      runs.push_back(run);
      run = FoldRun{};
    }
  }
  if (run.calls > 0) runs.push_back(run);  // open at stop: the collector stores it then
}

// The kernel marks every open call of a thread that leaves its CPU: a switch record of the
// thread (prev_tid) between a call's start and end makes it a row.
void fold_mark_switched_out(sqlite3* db, int64_t session_id, std::map<int64_t, std::vector<FoldRow>>& by_tid) {
  std::map<int64_t, std::vector<int64_t>> outs;  // tid -> its switch-outs, in time order
  sqlite3_stmt* q = nullptr;
  const std::string sql = "SELECT prev_tid, ts_ns FROM sched WHERE session_id = " + std::to_string(session_id) +
                          " ORDER BY prev_tid, ts_ns";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr) != SQLITE_OK) throw std::runtime_error("fold_counted_calls: prepare sched");
  while (sqlite3_step(q) == SQLITE_ROW) outs[sqlite3_column_int64(q, 0)].push_back(sqlite3_column_int64(q, 1));
  sqlite3_finalize(q);
  for (auto& [tid, calls] : by_tid) {
    auto it = outs.find(tid);
    if (it == outs.end()) continue;
    const std::vector<int64_t>& ts = it->second;
    for (FoldRow& c : calls) {
      auto first = std::lower_bound(ts.begin(), ts.end(), c.ts);
      c.switched_out = first != ts.end() && *first <= c.end();
    }
  }
}

}  // namespace

FoldedCalls fold_counted_calls(const std::string& db_path, int64_t session_id) {
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("fold_counted_calls: cannot open " + db_path);
  struct Closer {
    sqlite3* d;
    ~Closer() { sqlite3_close(d); }
  } closer{db};
  std::map<int64_t, std::vector<FoldRow>> by_tid;
  sqlite3_stmt* q = nullptr;
  const std::string sql = "SELECT id, tid, ts_ns, dur_ns, op_id, ret, stack_id IS NOT NULL FROM events WHERE session_id = " +
                          std::to_string(session_id) + " ORDER BY tid, ts_ns, id";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr) != SQLITE_OK) throw std::runtime_error("fold_counted_calls: prepare");
  while (sqlite3_step(q) == SQLITE_ROW) {
    const auto op = static_cast<uint16_t>(sqlite3_column_int64(q, 4));
    if (!is_traced_call_op(op)) continue;
    by_tid[sqlite3_column_int64(q, 1)].push_back(FoldRow{sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 2),
                                                         sqlite3_column_int64(q, 3), op, sqlite3_column_int64(q, 5),
                                                         sqlite3_column_int(q, 6) != 0});
  }
  sqlite3_finalize(q);
  fold_mark_switched_out(db, session_id, by_tid);
  std::vector<int64_t> drop;
  std::vector<FoldRun> runs;
  int64_t switched = 0;
  for (auto& [tid, calls] : by_tid) fold_thread(calls, drop, runs, switched);
  fold_exec(db, "BEGIN");
  // A run's row, as the collector decodes it (collector/decode.cpp decode_run): a0 calls, a1
  // their ns, a2 the last op; no cpu, no stack, the process's cgroup kept.
  for (const FoldRun& r : runs)
    fold_exec(db, "UPDATE events SET op_id = " + std::to_string(CW_OP_CALLS_AGGREGATED) + ", ts_ns = " + std::to_string(r.first_ts) +
                      ", dur_ns = " + std::to_string(r.last_end - r.first_ts) + ", ret = 0, cpu = NULL, stack_id = NULL, a0 = " +
                      std::to_string(r.calls) + ", a1 = " + std::to_string(r.ns) + ", a2 = " + std::to_string(r.op) +
                      ", a3 = 0, a4 = 0, a5 = 0 WHERE id = " + std::to_string(r.first_id));
  std::vector<int64_t> firsts;
  for (const FoldRun& r : runs) firsts.push_back(r.first_id);
  std::sort(firsts.begin(), firsts.end());
  for (int64_t id : drop)
    if (!std::binary_search(firsts.begin(), firsts.end(), id)) fold_exec(db, "DELETE FROM events WHERE id = " + std::to_string(id));
  fold_exec(db, "COMMIT");
  return {static_cast<int64_t>(drop.size()), static_cast<int64_t>(runs.size()), switched};
}

}  // namespace causeway::test
