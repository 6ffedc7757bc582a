// Writer throughput against SQLite's own batched-insert rate, measured in one run.
//
//   bench_ingest [N=5000000] [DIR=.]
//
// Baseline: the same rows into the same `events` table (same index, WAL, synchronous=NORMAL)
// with one prepared INSERT and 65,536-row transactions: what SQLite itself can do here.
// Ours: StoreWriter from a producer thread (queue, batching, rollups, counters included).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tracedb/event_row.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kT0 = 1'790'000'000'000'000'000;

CallRecord make(int64_t i) {
  CallRecord r;
  r.ts_ns = kT0 + i * 1000;
  r.dur_ns = 2000 + (i * 7919) % 50000;
  r.pid = 4821 + static_cast<uint32_t>(i % 4);
  r.tid = r.pid;
  r.op = static_cast<uint16_t>(i % 3 == 0 ? 116 : 112);
  r.cpu = static_cast<int32_t>(i % 2);
  r.a = {8 << 20, 0x7f3a60000000, 1, 0x55d0c0de, 0, 0};
  r.stack_hash = 0x1234567 + static_cast<uint64_t>(i % 8);
  return r;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int64_t file_bytes(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_size : 0;
}

double baseline(const std::string& path, int64_t n) {
  auto db = open_for_write(path);
  if (!db) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    std::exit(1);
  }
  sqlite3* h = db->get();
  auto st = Statement::prepare(h, event_insert_sql(1));
  auto t = Clock::now();
  (void)exec_sql(h, "BEGIN");
  for (int64_t i = 0; i < n; ++i) {
    bind_event(*st, 0, 1, make(i));
    st->step();
    sqlite3_reset(st->get());
    if ((i + 1) % 65536 == 0) (void)exec_sql(h, "COMMIT; BEGIN");
  }
  (void)exec_sql(h, "COMMIT");
  return static_cast<double>(n) / seconds_since(t);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 5'000'000;
  std::string dir = argc > 2 ? argv[2] : ".";
  std::string base_path = dir + "/bench-ingest-baseline.db", ours_path = dir + "/bench-ingest-writer.db";
  for (const auto& p : {base_path, ours_path})
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p + suffix);

  double base_rate = baseline(base_path, n);

  auto w = StoreWriter::open(ours_path);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.error().message.c_str());
    return 1;
  }
  SessionInfo s;
  s.source_kind = "live";
  s.started_ns = kT0;
  (void)(*w)->begin_session(s);
  auto t = Clock::now();
  for (int64_t i = 0; i < n; ++i) (*w)->push_wait(make(i));
  (*w)->flush();
  double ours_rate = static_cast<double>(n) / seconds_since(t);
  (void)(*w)->close(kT0 + n * 1000);
  auto c = (*w)->counters();

  std::printf("events                       %lld\n", static_cast<long long>(n));
  std::printf("sqlite batched insert        %.0f rows/s\n", base_rate);
  std::printf("causeway writer (sustained)  %.0f events/s\n", ours_rate);
  std::printf("writer / sqlite ratio        %.2f\n", ours_rate / base_rate);
  std::printf("dropped                      %llu\n", static_cast<unsigned long long>(c.dropped_writer));
  std::printf("DB bytes per event           %.1f (file %lld bytes, rollups and index included)\n",
              static_cast<double>(file_bytes(ours_path)) / static_cast<double>(n),
              static_cast<long long>(file_bytes(ours_path)));
  for (const auto& p : {base_path, ours_path})
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p + suffix);
  return 0;
}
