// sqlguard costs: what the guard adds to a simple query (target < 50 µs), the progress
// handler's share of a CPU-bound query, and how soon a runaway query stops after its
// deadline (target < 0.5 s). Prints one line per figure; ratios come from the same run.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "sqlguard/guard.h"
#include "sqlguard/validator.h"
#include "tracedb/open.h"
#include "tracedb/op_catalog.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// Median over `rounds` of the mean per-iteration time of `iters` calls.
template <typename F>
double per_call_us(int rounds, int iters, F&& f) {
  std::vector<double> r;
  for (int k = 0; k < rounds; ++k) {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) f();
    r.push_back(us_since(t0) / iters);
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

std::string make_db(const std::string& dir) {
  std::string path = dir + "/bench.db";
  auto w = StoreWriter::open(path);
  if (!w) {
    std::fprintf(stderr, "cannot create %s: %s\n", path.c_str(), w.error().message.c_str());
    std::exit(1);
  }
  SessionInfo s;
  s.source_kind = "demo";
  s.started_ns = 1'790'000'000'000'000'000;
  (void)(*w)->begin_session(s);
  const OpInfo* op = find_op("cudaStreamSynchronize");
  for (int i = 0; i < 100000; ++i) {
    CallRecord r;
    r.ts_ns = s.started_ns + i * 10'000;
    r.dur_ns = 1000 + i % 977;
    r.pid = 100 + i % 7;
    r.tid = r.pid;
    r.op = op ? op->id : 1;
    (*w)->push(r);
  }
  (void)(*w)->close(s.started_ns + 2'000'000'000);
  return path;
}

void raw_query(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(st); ++i) (void)sqlite3_column_int64(st, i);
  }
  sqlite3_finalize(st);
}

}  // namespace

int main() {
  std::string dir = (std::filesystem::temp_directory_path() / ("causeway-sqlguard-bench-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  std::string path = make_db(dir);
  const char* simple = "SELECT count(*) FROM sessions";
  // 20 rows by rowid: adds JSON conversion of 60 cells.
  const char* view = "SELECT id, pid, dur_ns FROM events WHERE id <= 20";

  auto raw = open_read_only(path);
  auto guarded = sqlguard::GuardedConnection::open(path);
  if (!raw || !guarded) return 1;

  for (const char* sql : {simple, view}) {
    // Alternating rounds, so that load from other processes hits both sides alike.
    std::vector<double> raws, guards;
    for (int k = 0; k < 9; ++k) {
      raws.push_back(per_call_us(1, 2000, [&] { raw_query(raw->get(), sql); }));
      guards.push_back(per_call_us(1, 2000, [&] { (void)guarded->run(sql); }));
    }
    std::sort(raws.begin(), raws.end());
    std::sort(guards.begin(), guards.end());
    double raw_us = raws[raws.size() / 2], guard_us = guards[guards.size() / 2];
    double validate_us = per_call_us(7, 2000, [&] { (void)sqlguard::validate_sql(sql); });
    std::printf("%-14s raw %.2f us, guarded %.2f us, overhead %.2f us (validator %.2f us)\n",
                sql == simple ? "simple query:" : "20-row query:", raw_us, guard_us, guard_us - raw_us, validate_us);
  }

  double raw_open = per_call_us(5, 200, [&] {
    auto db = open_read_only(path);
    raw_query(db->get(), simple);
  });
  double guard_open = per_call_us(5, 200, [&] { (void)sqlguard::run_guarded_query(path, simple); });
  std::printf("one-shot (open+query+close): raw %.1f us, guarded %.1f us, overhead %.1f us\n", raw_open, guard_open,
              guard_open - raw_open);

  // CPU-bound query: the progress handler's clock read every 1000 VM ops.
  const char* cpu = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 2000000) SELECT sum(n) FROM r";
  double raw_cpu = per_call_us(3, 1, [&] { raw_query(raw->get(), cpu); });
  double guard_cpu = per_call_us(3, 1, [&] { (void)guarded->run(cpu); });
  std::printf("CPU-bound 2M-row CTE: raw %.1f ms, guarded %.1f ms (x%.3f)\n", raw_cpu / 1000, guard_cpu / 1000,
              guard_cpu / raw_cpu);

  const char* runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r";
  for (int64_t deadline : {1000, 5000}) {
    sqlguard::QueryLimits l;
    l.deadline_ms = deadline;
    auto t0 = Clock::now();
    auto r = guarded->run(runaway, l);
    double ms = us_since(t0) / 1000;
    std::printf("runaway stop, deadline %lld ms: %.1f ms (%s, %.2f ms after the deadline)\n",
                static_cast<long long>(deadline), ms, r.ok() ? "ok?!" : r.error().code.c_str(), ms - deadline);
  }
  std::atomic<bool> cancel{false};
  sqlguard::QueryLimits l;
  l.cancel = &cancel;
  Clock::time_point set_at;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    set_at = Clock::now();
    cancel.store(true);
  });
  auto r = guarded->run(runaway, l);
  double latency = us_since(set_at);
  t.join();
  std::printf("cancel flag -> query returned: %.1f us (%s)\n", latency, r.ok() ? "ok?!" : r.error().code.c_str());
  std::filesystem::remove_all(dir);
  return 0;
}
