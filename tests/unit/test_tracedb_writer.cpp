// The store writer: everything accepted is committed, overflow is counted, --max-db holds.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <thread>
#include <vector>

#include "bpf/events.h"
#include "tests/support/test_support.h"
#include "tracedb/event_blocks.h"
#include "tracedb/op_catalog.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using causeway::test::TempDir;

namespace {

constexpr int64_t kT0 = 1'790'000'000'000'000'000;  // a fixed Unix-ns origin

SessionInfo live_session() {
  SessionInfo s;
  s.source_kind = "live";
  s.label = "test";
  s.started_ns = kT0;
  return s;
}

CallRecord call_at(int64_t i) {
  CallRecord r;
  r.ts_ns = kT0 + i * 1000;  // 1M calls/s of data
  r.dur_ns = 100 + (i % 50);
  r.pid = 100 + static_cast<uint32_t>(i % 3);
  r.tid = r.pid;
  r.op = 116;  // cudaStreamSynchronize
  r.a = {static_cast<int64_t>(i), 0, 0, 0, 0, 0};
  return r;
}

int64_t count(const std::string& path, const char* sql) {
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  return query_int(db->get(), sql)->value_or(-1);
}

}  // namespace

TEST_CASE("every accepted record is committed, across threads, with rollups matching") {
  TempDir dir;
  std::string path = dir.file("t.db");
  auto w = StoreWriter::open(path, WriterOptions{.queue_capacity = 1 << 20, .batch_rows = 5000});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t)
    producers.emplace_back([&, t] {
      for (int64_t i = t; i < 200'000; i += 4) (*w)->push_wait(call_at(i));
    });
  for (auto& p : producers) p.join();
  (*w)->push_meta(ProcessRecord{.pid = 100, .comm = "python3", .cmdline = "python3 train.py"});
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  auto c = (*w)->counters();
  CHECK(c.accepted == 200'000);
  CHECK(c.written == 200'000);
  CHECK(c.dropped_writer == 0);
  CHECK(count(path, "SELECT count(*) FROM events") == 200'000);
  CHECK(count(path, "SELECT sum(count) FROM rollups") == 200'000);
  CHECK(count(path, "SELECT sum(sum_ns) FROM rollups") == count(path, "SELECT sum(dur_ns) FROM events"));
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'events_written'") == 200'000);
  CHECK(count(path, "SELECT stopped_ns IS NOT NULL FROM sessions") == 1);
  CHECK(count(path, "SELECT count(*) FROM processes WHERE comm = 'python3'") == 1);
}

TEST_CASE("sched and wakeup rows go many per INSERT: every row, every column, in order, rolled up") {
  // 64 + 8 + 1 + 1 + 1 rows: every group size of MultiRowInsert (tracedb/multi_row_insert.h),
  // in one batch; the rowids follow the order the rows were pushed.
  TempDir dir;
  std::string path = dir.file("t.db");
  auto w = StoreWriter::open(path, WriterOptions{.queue_capacity = 1 << 16});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  constexpr int kRows = 75;
  for (int i = 0; i < kRows; ++i) {
    const uint32_t u = static_cast<uint32_t>(i);
    REQUIRE((*w)->push(SwitchRecord{kT0 + i * 1000, i % 4, 1000 + u, 500 + u % 3, 100 + i, i % 3, 2000 + u, 600 + u % 2,
                                    110 + i}));
    REQUIRE((*w)->push(WakeupRecord{kT0 + i * 1000 + 7, 3000 + u, 700 + u % 5, 4000 + u, 800 + u % 7, i % 2}));
  }
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto s = Statement::prepare(db->get(),
                              "SELECT rowid, ts_ns, cpu, prev_tid, prev_pid, prev_prio, prev_state, next_tid, next_pid, "
                              "next_prio FROM sched ORDER BY rowid");
  REQUIRE(s.ok());
  int n = 0;
  for (; s->step() == SQLITE_ROW; ++n) {
    CHECK(s->col_int(0) == n + 1);
    CHECK(s->col_int(1) == kT0 + n * 1000);
    CHECK(s->col_int(2) == n % 4);
    CHECK(s->col_int(3) == 1000 + n);
    CHECK(s->col_int(4) == 500 + n % 3);
    CHECK(s->col_int(5) == 100 + n);
    CHECK(s->col_int(6) == n % 3);
    CHECK(s->col_int(7) == 2000 + n);
    CHECK(s->col_int(8) == 600 + n % 2);
    CHECK(s->col_int(9) == 110 + n);
  }
  CHECK(n == kRows);
  auto k = Statement::prepare(db->get(), "SELECT rowid, ts_ns, tid, pid, waker_tid, waker_pid, target_cpu FROM wakeups ORDER BY rowid");
  REQUIRE(k.ok());
  n = 0;
  for (; k->step() == SQLITE_ROW; ++n) {
    CHECK(k->col_int(0) == n + 1);
    CHECK(k->col_int(1) == kT0 + n * 1000 + 7);
    CHECK(k->col_int(2) == 3000 + n);
    CHECK(k->col_int(3) == 700 + n % 5);
    CHECK(k->col_int(4) == 4000 + n);
    CHECK(k->col_int(5) == 800 + n % 7);
    CHECK(k->col_int(6) == n % 2);
  }
  CHECK(n == kRows);
  CHECK(count(path, "SELECT count(*) FROM sched WHERE session_id = (SELECT id FROM sessions)") == kRows);
  CHECK(count(path, "SELECT count(*) FROM wakeups WHERE session_id = (SELECT id FROM sessions)") == kRows);
  // Each row rolled up once under its process (the one switched out, the one woken).
  CHECK(count(path, "SELECT sum(count) FROM rollups") == 2 * kRows);
  CHECK(count(path, "SELECT count(DISTINCT pid) FROM rollups") == 3 + 5);
}

TEST_CASE("a full queue refuses records and counts each refusal; nothing is lost silently") {
  TempDir dir;
  std::string path = dir.file("t.db");
  // The writer only drains on its interval (10 s), so the queue fills.
  auto w = StoreWriter::open(path, WriterOptions{.queue_capacity = 1000, .batch_rows = 1'000'000,
                                                 .flush_interval_ms = 10'000});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  int refused = 0;
  for (int64_t i = 0; i < 5000; ++i) refused += (*w)->push(call_at(i)) ? 0 : 1;
  CHECK(refused == 4000);
  (*w)->set_counter("dropped_ring", 17);
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  CHECK((*w)->counters().dropped_writer == 4000);
  CHECK(count(path, "SELECT count(*) FROM events") == 1000);
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'dropped_writer'") == 4000);
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'dropped_ring'") == 17);
}

TEST_CASE("room() counts rows queued and in flight; waiting for room makes the writer write now") {
  TempDir dir;
  std::string path = dir.file("t.db");
  // Writes only on its 10 s interval, so nothing leaves the queue until flush().
  auto w = StoreWriter::open(path, WriterOptions{.queue_capacity = 10'000, .batch_rows = 1'000'000,
                                                 .flush_interval_ms = 10'000});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  CHECK((*w)->room() == 10'000);
  for (int64_t i = 0; i < 9'000; ++i) REQUIRE((*w)->push(call_at(i)));
  CHECK((*w)->room() == 1'000);
  CHECK((*w)->wait_for_room(1'000, std::chrono::milliseconds(0)));
  // A producer waiting for more room than is free makes the writer write now, not at its
  // 10 s interval (the collector's drain waits like this instead of dropping).
  const auto t0 = std::chrono::steady_clock::now();
  CHECK((*w)->wait_for_room(5'000, std::chrono::seconds(8)));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  (*w)->flush();
  CHECK((*w)->room() == 10'000);
  // Records of several lanes (4096-row chunks) share the one capacity.
  int64_t taken = 0;
  for (int64_t i = 0; i < 20'000; ++i) {
    if ((*w)->room() == 0) (*w)->flush();
    bool ok = i % 2 ? (*w)->push(call_at(9'000 + i)) : (*w)->push(SwitchRecord{kT0 + i, 0, 1, 1, 120, 0, 2, 2, 120});
    REQUIRE(ok);
    ++taken;
  }
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  auto c = (*w)->counters();
  CHECK(c.dropped_writer == 0);
  CHECK(c.written == 9'000 + taken);
  CHECK(c.queue_peak == 10'000);
  CHECK(count(path, "SELECT count(*) FROM events") == 9'000 + 10'000);
  CHECK(count(path, "SELECT count(*) FROM sched") == 10'000);
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'writer_queue_peak'") == 10'000);
  // The zone map's id ranges cover every event exactly once (multi-row INSERTs keep ids contiguous).
  CHECK(count(path, "SELECT sum(last_id - first_id + 1) FROM event_blocks") == 19'000);
  CHECK(count(path, "SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_blocks b "
                    "WHERE e.id BETWEEN b.first_id AND b.last_id AND e.ts_ns BETWEEN b.min_ts AND b.max_ts)") == 0);
}

// The demos' zone map laid out by the writer as it writes (WriterOptions::event_block_rows) is
// the one rebuild_event_blocks lays out over the same rows afterwards, blocks that span
// batches and a session whose first id is not 1 included.
TEST_CASE("event_block_rows: the writer lays out the same blocks as rebuild_event_blocks, across batches") {
  TempDir dir;
  std::string path = dir.file("t.db");
  {
    auto first = StoreWriter::open(path);  // an earlier session: the next one's ids start at 124
    REQUIRE(first.ok());
    REQUIRE((*first)->begin_session(live_session()).ok());
    for (int64_t i = 0; i < 123; ++i) REQUIRE((*first)->push(call_at(i)));
    REQUIRE((*first)->close(kT0 + 1'000'000'000).ok());
  }
  auto w = StoreWriter::open(path, WriterOptions{.batch_rows = 1'000'000, .flush_interval_ms = 10'000,
                                                 .event_block_rows = 1'000});
  REQUIRE(w.ok());
  auto sid = (*w)->begin_session(live_session());
  REQUIRE(sid.ok());
  // Batches of 700, 1 and 2,600 rows (flush() ends each): blocks are cut inside batches and
  // grow across them; the calls' ends are not in ts order (a long one every 97th).
  int64_t i = 0;
  for (int64_t batch : {700, 1, 2'600, 1'255}) {
    for (int64_t n = 0; n < batch; ++n, ++i) {
      CallRecord c = call_at(i);
      if (i % 97 == 0) c.dur_ns = 500'000;
      REQUIRE((*w)->push(c));
    }
    (*w)->flush();
  }
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  auto blocks = [&] {
    auto db = open_read_only(path);
    REQUIRE(db.ok());
    auto st = Statement::prepare(db->get(), "SELECT first_id, last_id, min_ts, max_ts, max_end_ns FROM event_blocks "
                                             "WHERE session_id = " + std::to_string(*sid) + " ORDER BY first_id");
    REQUIRE(st.ok());
    std::vector<std::array<int64_t, 5>> out;
    while (st->step() == SQLITE_ROW) out.push_back({st->col_int(0), st->col_int(1), st->col_int(2), st->col_int(3), st->col_int(4)});
    return out;
  };
  const auto written = blocks();
  REQUIRE(written.size() == 5);  // 4,556 rows: 4 blocks of 1,000 and one of 556
  CHECK(written[0][0] == 124);
  CHECK(written[1][0] == 1'124);
  CHECK(written[4][1] - written[4][0] + 1 == 556);
  {
    auto rw = open_for_write(path);
    REQUIRE(rw.ok());
    REQUIRE(rebuild_event_blocks(rw->get(), *sid, 1'000).ok());
    close_writer_cleanly(*rw);
  }
  CHECK(blocks() == written);
}

TEST_CASE("a reader sees committed batches while the writer is still running") {
  TempDir dir;
  std::string path = dir.file("t.db");
  auto w = StoreWriter::open(path, WriterOptions{.flush_interval_ms = 50});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  for (int64_t i = 0; i < 10'000; ++i) (*w)->push_wait(call_at(i));
  (*w)->flush();
  auto r = open_read_only(path);  // WAL, writer live: a normal read-only connection
  REQUIRE(r.ok());
  CHECK(query_int(r->get(), "SELECT count(*) FROM events")->value_or(-1) == 10'000);
  for (int64_t i = 10'000; i < 20'000; ++i) (*w)->push_wait(call_at(i));
  (*w)->flush();
  CHECK(query_int(r->get(), "SELECT count(*) FROM events")->value_or(-1) == 20'000);
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
}

TEST_CASE("--max-db prunes the oldest raw rows, keeps rollups, and the file stays under the cap") {
  TempDir dir;
  std::string path = dir.file("t.db");
  const int64_t cap = 8ll << 20;
  auto w = StoreWriter::open(path, WriterOptions{.batch_rows = 20'000, .max_db_bytes = cap});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  const int64_t n = 1'500'000;  // ~70 MiB of raw rows unpruned
  for (int64_t i = 0; i < n; ++i) (*w)->push_wait(call_at(i));
  REQUIRE((*w)->close(kT0 + 2'000'000'000).ok());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_size <= cap);
  CHECK((*w)->counters().pruned > 0);
  int64_t kept = count(path, "SELECT count(*) FROM events");
  CHECK(kept < n);
  CHECK(kept > 0);
  // The newest rows survive, the oldest went first.
  CHECK(count(path, "SELECT max(a0) FROM events") == n - 1);
  CHECK(count(path, "SELECT min(a0) FROM events") == n - kept);
  // Rollups still account for every call ever written.
  CHECK(count(path, "SELECT sum(count) FROM rollups") == n);
}

TEST_CASE("one writer per DB: a second is refused naming the first; closing the first frees the DB") {
  TempDir dir;
  std::string path = dir.file("t.db");
  auto first = StoreWriter::open(path, WriterOptions{.holder = "causeway trace"});
  REQUIRE(first.ok());
  CHECK(test::file_exists(path + "-lock"));
  auto second = StoreWriter::open(path);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == "db_busy");
  CHECK(second.error().message.find("being written by causeway trace (pid " + std::to_string(::getpid()) + ")") !=
        std::string::npos);
  REQUIRE((*first)->close(kT0).ok());
  CHECK_FALSE(test::file_exists(path + "-lock"));
  auto third = StoreWriter::open(path);
  CHECK(third.ok());
}

TEST_CASE("a DB deleted while written: nothing more goes into it, every row after is counted per op") {
  TempDir dir;
  std::string path = dir.file("t.db");
  auto w = StoreWriter::open(path, WriterOptions{.flush_interval_ms = 50});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  for (int64_t i = 0; i < 1000; ++i) (*w)->push_wait(call_at(i));
  (*w)->flush();
  CHECK((*w)->fault() == WriteFault::none);
  REQUIRE(::unlink(path.c_str()) == 0);
  for (int64_t i = 1000; i < 1500; ++i) (*w)->push_wait(call_at(i));
  for (int64_t i = 0; i < 10; ++i) REQUIRE((*w)->push(SwitchRecord{kT0 + i, 0, 1, 1, 120, 0, 2, 2, 120}));
  (*w)->flush();
  CHECK((*w)->fault() == WriteFault::db_deleted);
  auto closed = (*w)->close(kT0 + 1'000'000'000);
  REQUIRE_FALSE(closed.ok());
  CHECK(closed.error().code == "db_gone");
  const auto c = (*w)->counters();
  CHECK(c.written == 1000);
  CHECK(c.dropped_writer == 510);
  CHECK(c.dropped_write_error == 510);
  CHECK(c.dropped_by_op.at(116) == 500);
  CHECK(c.dropped_by_op.at(400) == 10);
  CHECK((*w)->health().last_fault == WriteFault::db_deleted);
  CHECK_FALSE(test::file_exists(path));  // not recreated
}

TEST_CASE("a failed write loses its batch only: counted per op, rollups hold committed rows, writes resume") {
  TempDir dir;
  std::string path = dir.file("t.db");
  auto w = StoreWriter::open(path, WriterOptions{.flush_interval_ms = 10'000});
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  for (int64_t i = 0; i < 3000; ++i) REQUIRE((*w)->push(call_at(i)));
  (*w)->flush();
  {
    // Another connection holds the write lock past the writer's 5 s busy timeout: its next
    // transaction (and the loss record after it) fail.
    DbHandle other;
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    other.reset(raw);
    REQUIRE(exec_sql(raw, "BEGIN IMMEDIATE").ok());
    for (int64_t i = 3000; i < 5000; ++i) REQUIRE((*w)->push(call_at(i)));
    (*w)->flush();
    CHECK((*w)->fault() == WriteFault::write_failed);
    CHECK((*w)->health().failing_since_ns > 0);
    REQUIRE(exec_sql(raw, "ROLLBACK").ok());
  }
  for (int64_t i = 5000; i < 6000; ++i) REQUIRE((*w)->push(call_at(i)));
  (*w)->flush();
  CHECK((*w)->fault() == WriteFault::none);
  REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  const auto c = (*w)->counters();
  CHECK(c.failed_writes == 1);
  CHECK(c.dropped_by_op.at(116) == 2000);
  CHECK(count(path, "SELECT count(*) FROM events") == 4000);
  CHECK(count(path, "SELECT sum(count) FROM rollups") == 4000);
  CHECK(count(path, "SELECT sum(sum_ns) FROM rollups") == count(path, "SELECT sum(dur_ns) FROM events"));
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'dropped_writer.cudaStreamSynchronize'") == 2000);
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'dropped_writer'") == 2000);
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'write_failures'") == 1);
  CHECK(count(path, "SELECT value FROM collector_stats WHERE name = 'events_written'") == 4000);
}

TEST_CASE("ops take the op table's family and layout, in a DB an older binary made too; v_cuda_calls names graphs") {
  TempDir dir;
  std::string path = dir.file("t.db");
  {
    auto w = StoreWriter::open(path);
    REQUIRE(w.ok());
    REQUIRE((*w)->begin_session(live_session()).ok());
    REQUIRE((*w)->close(kT0 + 1000).ok());
  }
  {
    // What an older binary left: graph launches without the exec in their layout, no family.
    auto db = open_for_write(path);
    REQUIRE(db.ok());
    REQUIRE(exec_sql(db->get(), "UPDATE ops SET arg_names = ',,,stream', family = NULL WHERE id = " +
                                    std::to_string(CW_OP_CUDA_GRAPH_LAUNCH)).ok());
    close_writer_cleanly(*db);
  }
  auto w = StoreWriter::open(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->begin_session(live_session()).ok());
  auto at = [](int64_t i, uint16_t op, std::array<int64_t, 6> a) {
    CallRecord r = call_at(i);
    r.op = op;
    r.a = a;
    return r;
  };
  const int64_t stream = 0x1000, graph = 0x6a0000000010, exec = 0x6e0000000010;
  (*w)->push_wait(at(0, CW_OP_CUDA_STREAM_BEGIN_CAPTURE, {0, 0, 0, stream, 0, 0}));
  (*w)->push_wait(at(1, CW_OP_CUDA_STREAM_END_CAPTURE, {0, 0, graph, stream, 0, 0}));
  (*w)->push_wait(at(2, CW_OP_CUDA_GRAPH_INSTANTIATE, {0, exec, graph, 0, 0, 0}));
  (*w)->push_wait(at(3, CW_OP_CUDA_GRAPH_LAUNCH, {0, exec, 0, stream, 0, 0}));
  (*w)->push_wait(at(4, CW_OP_CUDA_GRAPH_LAUNCH, {0, exec, 0, stream, 0, 0}));
  (*w)->push_wait(at(5, CW_OP_CUDA_GRAPH_INSTANTIATE, {0, 0, graph, 0, 0, 0}));  // failed: no exec written
  REQUIRE((*w)->close(kT0 + 1'000'000).ok());

  auto text = [&](const std::string& sql) {
    auto db = open_read_only(path);
    REQUIRE(db.ok());
    auto st = Statement::prepare(db->get(), sql);
    REQUIRE(st.ok());
    REQUIRE(st->step() == SQLITE_ROW);
    return st->col_text(0);
  };
  const std::string launch_id = std::to_string(CW_OP_CUDA_GRAPH_LAUNCH);
  CHECK(text("SELECT arg_names FROM ops WHERE id = " + launch_id) == std::string(find_op(CW_OP_CUDA_GRAPH_LAUNCH)->arg_names));
  CHECK(text("SELECT family FROM ops WHERE id = " + launch_id) == "graph");
  for (const OpInfo& op : op_catalog()) {
    CAPTURE(op.name);
    CHECK(text("SELECT family || '/' || arg_names FROM ops WHERE id = " + std::to_string(op.id)) ==
          std::string(family_name(op.family)) + "/" + std::string(op.arg_names));
  }
  const std::string in_session = " FROM v_cuda_calls WHERE session_id = 2";
  CHECK(count(path, ("SELECT count(*)" + in_session + " AND op = 'cudaGraphLaunch' AND graph_exec = " +
                     std::to_string(exec)).c_str()) == 2);
  CHECK(count(path, ("SELECT count(*)" + in_session + " AND op = 'cudaGraphInstantiate' AND graph_exec = " +
                     std::to_string(exec) + " AND graph = " + std::to_string(graph)).c_str()) == 1);
  CHECK(count(path, ("SELECT count(*)" + in_session + " AND op = 'cudaStreamEndCapture' AND graph_exec IS NULL AND graph = " +
                     std::to_string(graph) + " AND stream = " + std::to_string(stream)).c_str()) == 1);
  CHECK(count(path, ("SELECT count(*)" + in_session + " AND op = 'cudaStreamBeginCapture' AND graph_exec IS NULL AND "
                     "graph IS NULL AND family = 'graph_build'").c_str()) == 1);
  CHECK(count(path, ("SELECT count(*)" + in_session + " AND op = 'cudaGraphInstantiate' AND graph_exec IS NULL").c_str()) == 1);
  CHECK(count(path, "SELECT count(*) FROM schema_docs WHERE object = 'ops' AND column_name = 'family' AND "
                    "description LIKE '%graph_build%'") == 1);
}

// Each table family of the writer (tracedb/writer_*.cpp) binds its rows by column name from one
// list (tracedb/table_columns.h): every field lands in its own column, and a "none" is NULL.
TEST_CASE("every meta row kind is stored field by field in its own columns, none as NULL") {
  TempDir dir;
  const std::string path = dir.path() + "/meta.db";
  auto w = StoreWriter::open(path);
  REQUIRE(w.ok());
  auto& writer = **w;
  REQUIRE(writer.begin_session(live_session()).ok());
  ProcessRecord ranked;
  ranked.pid = 4821;
  ranked.ppid = 1;
  ranked.comm = "python3";
  ranked.cmdline = "python3 train.py";
  ranked.exe = "/usr/bin/python3";
  ranked.cgroup_id = 77;
  ranked.container_id = "c0ffee";
  ranked.first_ns = kT0 + 5;
  ranked.last_ns = kT0 + 9;
  ranked.exit_code = 3;
  ranked.cgroup_path = "/kubepods/pod1";
  ranked.launcher_rank = LauncherRank{2, 8, 1, "RANK", "job-9"};
  ProcessRecord bare;
  bare.pid = 4822;
  writer.push_meta(ranked);
  writer.push_meta(bare);
  writer.push_meta(ThreadRecord{4900, 4821, "worker", 0});
  writer.push_meta(CgroupRecord{77, "/kubepods/pod1", "", "pod-uid"});
  writer.push_meta(StackRecord{0x1234, {"a!f+0x1", "b.py:3 (g)"}});
  RequestRecord q;
  q.request_id = "req-1";
  q.server_pid = 4821;
  q.fd = 9;
  q.method = "POST";
  q.path = "/v1/chat/completions";
  q.start_ns = kT0 + 10;
  q.end_ns = kT0 + 20;
  q.first_token_ns = kT0 + 30;
  q.ttft_ns = 20;
  q.status = 200;
  q.model = "m";
  q.output_tokens = 7;
  writer.push_meta(q);
  EngineSampleRecord es{kT0 + 40, 4821, "vllm", "http://127.0.0.1:8000/metrics", {{"vllm:num_requests_running", "engine=\"0\"", 3.5}}};
  writer.push_meta(es);
  writer.flush();
  REQUIRE(writer.close(kT0 + 100).ok());

  CHECK(count(path, "SELECT count(*) FROM processes WHERE pid = 4821 AND ppid = 1 AND comm = 'python3' AND cmdline = "
                    "'python3 train.py' AND exe = '/usr/bin/python3' AND cgroup_id = 77 AND container_id = 'c0ffee' AND "
                    "first_ns = 1790000000000000005 AND last_ns = 1790000000000000009 AND exit_code = 3 AND cgroup_path = "
                    "'/kubepods/pod1' AND rank = 2 AND world_size = 8 AND local_rank = 1 AND rank_source = 'RANK' AND "
                    "job_id = 'job-9'") == 1);
  CHECK(count(path, "SELECT count(*) FROM processes WHERE pid = 4822 AND ppid IS NULL AND first_ns IS NULL AND last_ns IS "
                    "NULL AND exit_code IS NULL AND cgroup_path IS NULL AND rank IS NULL AND world_size IS NULL AND "
                    "local_rank IS NULL AND rank_source IS NULL AND job_id IS NULL") == 1);
  CHECK(count(path, "SELECT count(*) FROM threads WHERE tid = 4900 AND pid = 4821 AND comm = 'worker' AND cgroup_id IS NULL") == 1);
  CHECK(count(path, "SELECT count(*) FROM cgroups WHERE cgroup_id = 77 AND path = '/kubepods/pod1' AND container_id IS NULL "
                    "AND pod = 'pod-uid'") == 1);
  CHECK(count(path, "SELECT count(*) FROM stacks WHERE id = 4660 AND hash = 4660 AND frames = '[\"a!f+0x1\",\"b.py:3 (g)\"]'") == 1);
  CHECK(count(path, "SELECT count(*) FROM requests WHERE request_id = 'req-1' AND server_pid = 4821 AND fd = 9 AND method = "
                    "'POST' AND path = '/v1/chat/completions' AND first_byte_ns IS NULL AND first_token_ns = "
                    "1790000000000000030 AND ttft_ns = 20 AND e2e_ns IS NULL AND itl_us IS NULL AND status = 200 AND model = "
                    "'m' AND output_tokens = 7 AND input_tokens IS NULL AND end_reason = 'complete'") == 1);
  CHECK(count(path, "SELECT count(*) FROM engines WHERE pid = 4821 AND engine = 'vllm' AND url = "
                    "'http://127.0.0.1:8000/metrics'") == 1);
  CHECK(count(path, "SELECT count(*) FROM engine_metrics WHERE pid = 4821 AND ts_ns = 1790000000000000040 AND name = "
                    "'vllm:num_requests_running' AND labels = 'engine=\"0\"' AND value = 3.5") == 1);
}
