// Correlator throughput on an existing trace DB, and `explain`'s read path.
//
//   causeway_bench_diagnosis --db /tmp/big.db [--store] [--repeat N]
//
// Prints events/s of the correlator over the latest session (rows read from events, sched
// and wakeups per second of wall time), the same run's bare SQLite read of those events (the
// correlator's select list, every column read, nothing else) as the baseline the correlator
// cannot beat, and the time load_chains takes. With --store the
// chains replace the session's stored ones (what `causeway demo` does after writing).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "diagnosis/chains.h"
#include "diagnosis/correlator.h"
#include "diagnosis/event_window.h"
#include "diagnosis/session_scope.h"
#include "tracedb/chain_store.h"
#include "tracedb/event_columns.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds to step through the session's event rows reading every column the correlator
// selects; -1 on error.
double bare_scan_s(sqlite3* db, int64_t session_id, int64_t from_ns, int64_t to_ns, uint64_t& rows) {
  auto ids = event_ids_for_window(db, session_id, from_ns, to_ns);
  if (!ids) return -1;
  const double t0 = now_s();
  auto st = Statement::prepare(db, "SELECT " + event_select_list() + " FROM events WHERE id >= ?1 AND id <= ?2 ORDER BY id");
  if (!st) return -1;
  st->bind(1, ids->lo);
  st->bind(2, ids->hi);
  sqlite3_stmt* q = st->get();
  int64_t sink = 0;
  rows = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    for (int c = 0; c < col(EventCol::count_); ++c) sink += sqlite3_column_int64(q, c);
    ++rows;
  }
  const double dt = now_s() - t0;
  return sink == 42 ? dt + 0.0 : dt;  // sink read so the loop is not optimised away
}
}  // namespace

int main(int argc, char** argv) {
  std::string db_path;
  bool store = false, verbose = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--db") && i + 1 < argc) db_path = argv[++i];
    else if (!std::strcmp(argv[i], "--store")) store = true;
    else if (!std::strcmp(argv[i], "--verbose") || !std::strcmp(argv[i], "-v")) verbose = true;
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: causeway_bench_diagnosis --db PATH [--store] [--repeat N] [-v]\n");
      return 2;
    }
  }
  if (db_path.empty()) {
    std::fprintf(stderr, "causeway_bench_diagnosis: --db is required\n");
    return 2;
  }
  auto db = open_read_only(db_path);
  if (!db) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  auto scope = resolve_scope(db->get(), std::nullopt, std::nullopt);
  if (!scope) {
    std::fprintf(stderr, "%s\n", scope.error().message.c_str());
    return 1;
  }
  std::vector<ChainRecord> chains;
  std::vector<CallCauseRecord> causes;
  double best = 1e30;
  CorrelatorCounters counters;
  for (int r = 0; r < repeat; ++r) {
    double t0 = now_s();
    Correlator c(scope->session_id);
    if (auto a = c.analyze(db->get(), scope->from_ns, scope->to_ns + 1); !a) {
      std::fprintf(stderr, "%s\n", a.error().message.c_str());
      return 1;
    }
    auto ch = c.chains(db->get());
    if (!ch) {
      std::fprintf(stderr, "%s\n", ch.error().message.c_str());
      return 1;
    }
    double dt = now_s() - t0;
    best = std::min(best, dt);
    chains = std::move(*ch);
    causes = c.take_call_causes();
    counters = c.counters();
  }
  uint64_t rows = counters.events + counters.sched_rows + counters.wakeups;
  std::printf("correlator: session %lld, %.1f s of data, %llu events + %llu sched + %llu wakeups in %.3f s = %.2f M rows/s "
              "(%.2f M events/s), %llu slow calls, %zu chains\n",
              static_cast<long long>(scope->session_id), static_cast<double>(scope->to_ns - scope->from_ns) / 1e9,
              static_cast<unsigned long long>(counters.events), static_cast<unsigned long long>(counters.sched_rows),
              static_cast<unsigned long long>(counters.wakeups), best, static_cast<double>(rows) / best / 1e6,
              static_cast<double>(counters.events) / best / 1e6, static_cast<unsigned long long>(counters.slow_calls),
              chains.size());
  uint64_t bare_rows = 0;
  double bare = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const double b = bare_scan_s(db->get(), scope->session_id, scope->from_ns, scope->to_ns + 1, bare_rows);
    if (b < 0) {
      std::fprintf(stderr, "bare scan failed\n");
      return 1;
    }
    bare = std::min(bare, b);
  }
  std::printf("bare SQLite read of the same events (every selected column): %llu rows in %.3f s = %.2f M rows/s; "
              "correlator / bare read = %.2fx\n",
              static_cast<unsigned long long>(bare_rows), bare, static_cast<double>(bare_rows) / bare / 1e6, best / bare);
  for (const auto& c : chains)
    std::printf("  %-6s %-16s %-22s culprit=%s/%s  %s\n", c.severity.c_str(), c.cause.c_str(), c.op.c_str(),
                c.culprit_pid ? std::to_string(*c.culprit_pid).c_str() : "-", c.culprit_comm.c_str(),
                verbose ? c.summary.c_str() : "");
  db->reset();
  if (store) {
    auto rw = open_for_write(db_path);
    if (!rw) {
      std::fprintf(stderr, "%s\n", rw.error().message.c_str());
      return 1;
    }
    if (auto r = replace_session_diagnosis(rw->get(), scope->session_id, chains, causes); !r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 1;
    }
    close_writer_cleanly(*rw);
  }
  auto ro = open_read_only(db_path);
  if (!ro) return 1;
  double t0 = now_s();
  auto j = load_chains(ro->get(), ChainQuery{});
  double dt = now_s() - t0;
  if (!j) {
    std::fprintf(stderr, "%s\n", j.error().message.c_str());
    return 1;
  }
  std::printf("explain read path (load_chains): %zu chains in %.2f ms\n", (*j)["chains"].size(), dt * 1e3);
  return 0;
}
