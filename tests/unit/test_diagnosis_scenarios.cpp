// The correlator end to end: every demo scenario diagnosed with the right cause and culprit
// (several seeds), quiet yields no HIGH chain, chains are stable across rolling windows and
// live polls, chains round-trip through the DB, and `causeway explain` renders them. Plus
// hand-built sessions shaped like the planted live incidents (tests/bpf): a sleeping call
// whose wakeup waits behind a CPU hog, fsync D-waits between calls with the block requests
// issued by a kernel worker, and a stream sync blocked on a mutex a sibling thread holds.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diagnosis/chains.h"
#include "diagnosis/correlator.h"
#include "diagnosis/session_scope.h"
#include "bpf/events.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tests/unit/diagnosis_live_session.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using causeway::test::Live;
using causeway::test::TempDir;
using json = nlohmann::json;

namespace {

constexpr int64_t kMs = 1'000'000, kSec = 1'000'000'000;

std::vector<ChainRecord> diagnose_demo(const std::string& path, const std::string& scenario, uint64_t seed) {
  DemoOptions o;
  o.scenario = scenario;
  o.seed = seed;
  o.start_ns = 1'790'000'000'000'000'000 + static_cast<int64_t>(seed) * kSec;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto chains = diagnose_session(db->get(), d->session_id);
  REQUIRE_MESSAGE(chains.ok(), chains.error().message);
  return std::move(*chains);
}

std::string describe(const std::vector<ChainRecord>& chains) {
  std::string s;
  for (const auto& c : chains)
    s += c.severity + " " + c.cause + " " + c.op + " culprit=" + (c.culprit_pid ? std::to_string(*c.culprit_pid) : "-") +
         "/" + c.culprit_comm + "\n";
  return s;
}

void check_scenario(const ScenarioInfo& info, uint64_t seed) {
  TempDir dir;
  auto chains = diagnose_demo(dir.file("d.db"), info.name, seed);
  INFO("scenario " << info.name << " seed " << seed << "\n" << describe(chains));
  for (const auto& c : chains) {
    auto doc = json::parse(c.doc);
    for (const char* k : {"id", "severity", "cause", "summary", "pid", "comm", "op", "calls", "p50_us", "p99_us",
                          "slow_share", "evidence", "timeline", "stack", "recommendation"})
      CHECK_MESSAGE(doc.contains(k), k);
    CHECK(doc["id"] == c.id);
    CHECK(c.id.rfind("s1-", 0) == 0);
  }
  // The causes of the GPU waiting for the host fire only where they were planted.
  for (const auto& c : chains)
    for (const char* added : {"dataloader_starvation", "host_bound", "launch_bound", "graph_recapture"})
      if (c.cause == added) CHECK_MESSAGE(info.expected_cause == added, c.cause << " in scenario " << info.name);
  if (info.expected_cause.empty()) {
    for (const auto& c : chains) CHECK(c.severity != "HIGH");
    return;
  }
  REQUIRE(!chains.empty());
  const ChainRecord& top = chains.front();
  CHECK(top.cause == info.expected_cause);
  if (info.expected_cause == "cold_start") {
    CHECK(top.severity == "MEDIUM");
    for (const auto& c : chains) CHECK(c.severity != "HIGH");
  } else {
    CHECK(top.severity == "HIGH");
  }
  if (info.expected_culprit_pid) {
    REQUIRE(top.culprit_pid.has_value());
    CHECK(*top.culprit_pid == info.expected_culprit_pid);
  }
  if (!info.expected_culprit.empty()) CHECK(top.culprit_comm == info.expected_culprit);
  auto doc = json::parse(top.doc);
  if (info.name == "nccl-straggler") {
    // Late on its own work (on CPU) in most steps: nccl_straggler. The steps where rsync held
    // its CPU are rsync's cpu_contention, rank 2 its victim (one rule per gap).
    CHECK(doc["culprit"]["rank"] == 2);
    CHECK(doc["culprit"]["own_cause"] == "on_cpu");
    bool rsync_named = false;
    for (const auto& c : chains)
      if (c.cause == "cpu_contention" && c.culprit_pid == 8100) {
        rsync_named = true;
        CHECK(json::parse(c.doc)["pid"] == 6003);
        CHECK(c.culprit_comm == "rsync");
      }
    CHECK(rsync_named);
  }
  if (info.name == "lock-contention") CHECK(doc["culprit"]["tid"] == 4830);
  if (info.name == "network") CHECK(doc["culprit"]["peer"] == "10.0.3.12:43211");
  if (info.name == "incident") {
    CHECK(doc["culprit"]["cpu"] == 3);
    CHECK(doc["culprit"]["off_cpu_share"].get<double>() > 0.9);
    CHECK(doc["stack"].front() == "train.py:142 (train_step: loss.item())");
  }
  if (info.name == "oom") CHECK(doc["culprit"]["oom_killed"] == true);
  // Tenants: the culprit's cgroup, and its container when it runs in one.
  if (info.name == "incident") {
    CHECK(doc["culprit"]["cgroup"] == "/system.slice/backup.service");
    CHECK(doc["culprit"]["container"].is_null());
    CHECK(top.summary.find("tar (pid 991) in /system.slice/backup.service") != std::string::npos);
  }
  if (info.name == "gpu-steal") {
    CHECK(doc["culprit"]["container"] == "3f9a2b7c1d0e5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6");
    CHECK(doc["culprit"]["cgroup"].get<std::string>().find("kubepods-burstable-pod7c2e9a41") != std::string::npos);
  }
  if (info.name == "dataloader") {
    CHECK(doc["culprit"]["doing"] == "block_io");
    // The slowest worker gates the round robin: the loop waits on it, its siblings are ahead.
    CHECK(!doc["culprit"]["workers"].empty());
    CHECK(doc["culprit"]["workers"][0]["pid"] == 4901);
    CHECK(top.summary.find("disk reads") != std::string::npos);
  }
  if (info.name == "host-bound") CHECK(doc["tid"] == 4821);
  if (info.name == "launch-bound") CHECK(top.op == "cudaLaunchKernel");
  if (info.name == "io-stall") CHECK(doc["culprit"]["own_io"] == false);
}

}  // namespace

TEST_CASE("every demo scenario is diagnosed with the right cause and culprit (seed 1)") {
  for (const auto& info : demo_scenarios()) check_scenario(info, 1);
}

TEST_CASE("every demo scenario is diagnosed with the right cause and culprit (seeds 7 and 2026)") {
  for (const auto& info : demo_scenarios()) {
    check_scenario(info, 7);
    check_scenario(info, 2026);
  }
}

TEST_CASE("rolling windows and live polls give the same chains (same ids) as one pass") {
  TempDir dir;
  const std::string path = dir.file("d.db");
  auto whole = diagnose_demo(path, "incident", 3);
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto scope = resolve_scope(db->get(), std::nullopt, std::nullopt);
  REQUIRE(scope.ok());

  Correlator c(scope->session_id);
  for (int64_t t = scope->from_ns; t <= scope->to_ns; t += 3 * kSec) REQUIRE(c.analyze(db->get(), t, t + 3 * kSec).ok());
  auto rolled = c.chains(db->get());
  REQUIRE(rolled.ok());
  REQUIRE(rolled->size() == whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    CHECK((*rolled)[i].id == whole[i].id);
    CHECK((*rolled)[i].cause == whole[i].cause);
    CHECK((*rolled)[i].culprit_pid == whole[i].culprit_pid);
    CHECK((*rolled)[i].calls == doctest::Approx(whole[i].calls).epsilon(0.02));
  }

  LiveCorrelator live(scope->session_id, scope->from_ns, {}, 2 * kSec);
  auto first = live.poll(db->get());
  REQUIRE(first.ok());
  REQUIRE(!first->empty());
  CHECK(first->front().cause == "cpu_contention");
  auto again = live.poll(db->get());  // nothing new committed: nothing to re-emit
  REQUIRE(again.ok());
  CHECK(again->empty());
  auto fin = live.finish(db->get());
  REQUIRE(fin.ok());
  for (const auto& ch : *fin) CHECK(ch.id == first->front().id);  // updated, not duplicated
  CHECK(live.correlator().counters().events > 0);
}

TEST_CASE("chains round-trip through the DB and `causeway explain` renders them") {
  TempDir dir;
  const std::string path = dir.file("d.db");
  DemoOptions o;
  o.scenario = "incident";
  REQUIRE(run_demo(path, o).ok());
  auto stored = diagnose_and_store(path);
  REQUIRE_MESSAGE(stored.ok(), stored.error().message);
  CHECK(*stored >= 1);
  CHECK(*diagnose_and_store(path) == *stored);  // replacing, not appending

  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto loaded = load_chains(db->get(), ChainQuery{});
  REQUIRE(loaded.ok());
  REQUIRE((*loaded)["chains"].size() == *stored);
  CHECK((*loaded)["chains"][0]["cause"] == "cpu_contention");
  db->reset();

  auto text = test::run_causeway({"explain", "--db", path});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("[HIGH] cpu_contention") != std::string::npos);
  CHECK(text.out.find("Root cause:") != std::string::npos);
  CHECK(text.out.find("tar (pid 991)") != std::string::npos);
  CHECK(text.out.find("Call site:  train.py:142") != std::string::npos);
  CHECK(text.out.find("Fix:") != std::string::npos);

  auto js = test::run_causeway({"explain", "--db", path, "--json", "--pid", "991"});
  CHECK(js.exit_code == 0);
  auto doc = json::parse(js.out);
  REQUIRE(doc["chains"].size() >= 1);
  CHECK(doc["chains"][0]["culprit"]["pid"] == 991);

  auto none = test::run_causeway({"explain", "--db", path, "--pid", "12345"});
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("no causal chains") != std::string::npos);

  auto bad = test::run_causeway({"explain", "--db", path, "--json", "--since", "soon"});
  CHECK(bad.exit_code == 2);
  CHECK(json::parse(bad.out)["error"]["code"] == "usage");
  auto missing = test::run_causeway({"explain", "--db", dir.file("nope.db"), "--json"});
  CHECK(missing.exit_code == 1);
  CHECK(json::parse(missing.out)["error"]["code"] == "db_missing");
}


void hog_case(int64_t wait) {
  INFO("hog slice " << wait << " ns");
  TempDir dir;
  Live l(dir.file("l.db"));
  const uint32_t kW = 3000, kHog = 3100;
  l.proc(kW, "cw_workload");
  l.proc(kHog, "cw_hog");
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 2000; ++i) {
    // The fake sync sleeps 50 µs; while the hog runs (every 3rd call) the woken thread waits 4 ms for the CPU.
    bool hog = i % 3 == 0;
    int64_t dur = hog ? wait + 60'000 : 60'000;
    l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, t, dur);
    l.sw(t + 5'000, kW, kW, 1, hog ? kHog : 0, hog ? kHog : 0);
    l.wake(t + 55'000, kW, kW, 0, 0);
    l.sw(t + dur - 3'000, hog ? kHog : 0, hog ? kHog : 0, 0, kW, kW);
    t += dur + 100'000;
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  REQUIRE(!chains.empty());
  CHECK(chains[0].cause == "cpu_contention");
  CHECK(chains[0].culprit_pid == kHog);
  CHECK(chains[0].culprit_comm == "cw_hog");
}

TEST_CASE("live shape: a CPU hog on the workload's CPU (sleeping sync, wakeup waits behind the hog)") {
  hog_case(4 * kMs);  // a CFS slice
  hog_case(800'000);  // the short slices of EEVDF kernels
}

TEST_CASE("live shape: fsync-heavy writes on the calling thread (D between calls, requests from a kworker)") {
  TempDir dir;
  Live l(dir.file("l.db"));
  const uint32_t kW = 3200, kKw = 120, kJbd = 121;
  l.proc(kW, "cw_workload");
  l.proc(kKw, "kworker/u8:2", 2);
  l.proc(kJbd, "jbd2/sda1-8", 2);
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 3000; ++i) {
    l.call(kW, kW, CW_OP_CUDA_MEMCPY, t, 80'000, {1 << 20, 0, 1, 0});
    t += 90'000;
    if ((i + 1) % 10 == 0) {
      // fsync: the thread blocks in D 12 ms; the writeback and journal requests are issued by kernel threads.
      l.call(kKw, kKw, CW_OP_BLOCK_RQ, t + 100'000, 6 * kMs, {1 << 20, (8 << 20) | 1, 4096, 1});
      l.call(kJbd, kJbd, CW_OP_BLOCK_RQ, t + 6 * kMs, 5 * kMs, {16384, (8 << 20) | 1, 8192, 1});
      l.sw(t + 50'000, kW, kW, 2, 0, 0);
      l.sw(t + 12 * kMs, 0, 0, 0, kW, kW);
      t += 12 * kMs + 30'000;
    }
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  REQUIRE(!chains.empty());
  CHECK(chains[0].cause == "io_contention");
  CHECK(chains[0].culprit_pid == kW);  // its own writes
  auto doc = json::parse(chains[0].doc);
  CHECK(doc["where"] == "between_calls");
  CHECK(doc["culprit"]["own_io"] == true);
}

TEST_CASE("live shape: a stream sync blocked on a mutex a sibling thread holds") {
  TempDir dir;
  Live l(dir.file("l.db"));
  const uint32_t kW = 3300, kHolder = 3301;
  l.proc(kW, "cw_workload");
  l.w->push_meta(ThreadRecord{kHolder, kW, "lock_holder"});
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 2000; ++i) {
    bool held = i % 4 == 0;
    int64_t dur = held ? 5 * kMs : 50'000;
    l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, t, dur);
    if (held) {
      l.sw(t + 10'000, kW, kW, 1, 0, 0);
      l.wake(t + dur - 20'000, kW, kW, kHolder, kW);
      l.sw(t + dur - 10'000, 0, 0, 0, kW, kW);
    }
    t += dur + 60'000;
  }
  auto chains = l.finish(dir.file("l.db"));
  INFO(describe(chains));
  REQUIRE(!chains.empty());
  CHECK(chains[0].cause == "lock_contention");
  CHECK(chains[0].culprit_pid == kW);
  CHECK(chains[0].culprit_comm == "lock_holder");
  CHECK(json::parse(chains[0].doc)["culprit"]["tid"] == kHolder);
}

// At 500k calls/s the correlator's read-ahead (48k rows) spans less than 100 ms, so a call
// that returns half a second after it started is written ~250k rows behind its start. The
// zone map must still hand it to the chunk it started in: analyzed once, with its context,
// not dropped to "context only" or counted twice.
TEST_CASE("a call written far behind its start (past the read-ahead budget) is analyzed exactly once") {
  TempDir dir;
  const std::string path = dir.file("l.db");
  Live l(path);
  const uint32_t kW = 3400, kFlood = 3401, kHog = 3500;
  l.proc(kW, "cw_workload");
  l.proc(kHog, "cw_hog");
  l.w->push_meta(ThreadRecord{kFlood, kW, "launcher"});
  const int64_t t = l.t0 + kMs;
  const int64_t sync_ts = t + 10 * kMs, sync_dur = 500 * kMs;
  const int kFloodCalls = 300'000;  // 2 µs apart: 500k calls/s over 0.6 s
  bool sync_written = false;
  for (int i = 0; i < kFloodCalls; ++i) {
    const int64_t ts = t + int64_t{i} * 2'000;
    // Rows are written as calls return: the long sync lands after the launches that ended before it.
    if (!sync_written && ts + 1'000 > sync_ts + sync_dur) {
      l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, sync_ts, sync_dur);
      sync_written = true;
    }
    l.call(kW, kFlood, CW_OP_CUDA_LAUNCH_KERNEL, ts, 1'000, {0, 0xdead0000});
    if (i % 20'000 == 0) l.w->flush();  // one zone-map block per writer batch, as in a live trace
  }
  REQUIRE(sync_written);
  // The sync's thread is preempted by the hog for most of it (sched rows are written in time order).
  l.sw(sync_ts + kMs, kW, kW, 0, kHog, kHog);
  l.sw(sync_ts + sync_dur - kMs, kHog, kHog, 0, kW, kW);
  REQUIRE(l.w->close(l.t0 + 60 * kSec).ok());

  auto db = open_read_only(path);
  REQUIRE(db.ok());
  // Whole-session pass and live polls (which analyze in lagging windows) must agree.
  Correlator c(1);
  REQUIRE(c.analyze(db->get(), l.t0, t + 2 * kSec).ok());
  CHECK(c.counters().calls == kFloodCalls + 1);
  CHECK(c.counters().chunks > 10);  // the rate really did shrink the chunks
  auto chains = c.chains(db->get());
  REQUIRE(chains.ok());
  INFO(describe(*chains));
  REQUIRE(!chains->empty());
  CHECK((*chains)[0].cause == "cpu_contention");
  CHECK((*chains)[0].op == "cudaStreamSynchronize");
  CHECK((*chains)[0].culprit_pid == kHog);
  LiveCorrelator live(1, l.t0, {}, 100 * kMs);
  REQUIRE(live.poll(db->get()).ok());
  REQUIRE(live.finish(db->get()).ok());
  CHECK(live.correlator().counters().calls == kFloodCalls + 1);
}

// A live chain published early keeps following its evidence: when the window grows and its
// share falls under the impact floor, finish() re-renders it (now LOW, with the whole window)
// instead of leaving the stored row frozen at the last poll that still reported it.
TEST_CASE("live chains are updated to the end of the trace, not frozen at their last report") {
  TempDir dir;
  const std::string path = dir.file("l.db");
  Live l(path);
  const uint32_t kW = 3600, kHog = 3601;
  l.proc(kW, "cw_workload");
  l.proc(kHog, "cw_hog");
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 32'000; ++i) {  // 1 ms apart: 32 s; the hog strikes 20 times in the first second
    const bool hog = i % 50 == 25 && i < 1000;
    const int64_t dur = hog ? 1'060'000 : 60'000;
    l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, t, dur);
    if (hog) {
      l.sw(t + 5'000, kW, kW, 0, kHog, kHog);
      l.sw(t + dur - 3'000, kHog, kHog, 0, kW, kW);
    }
    t += std::max<int64_t>(dur + 100'000, kMs);
  }
  REQUIRE(l.w->close(t + kSec).ok());
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  LiveCorrelator live(1, l.t0, {}, t - l.t0 - 2 * kSec);  // the first poll sees the first 2 s
  auto first = live.poll(db->get());
  REQUIRE(first.ok());
  INFO(describe(*first));
  REQUIRE(!first->empty());
  const ChainRecord published = first->front();
  CHECK(published.cause == "cpu_contention");
  CHECK(published.severity != "LOW");
  auto fin = live.finish(db->get());
  REQUIRE(fin.ok());
  INFO(describe(*fin));
  bool updated = false;
  for (const auto& c : *fin)
    if (c.id == published.id) {
      updated = true;
      CHECK(c.severity == "LOW");
      CHECK(c.to_ns >= published.to_ns);
      CHECK(c.doc != published.doc);
    }
  CHECK(updated);
}

// Chains before anything was analyzed (an empty session, a first live poll with no data):
// no chain, and no arithmetic on the unset window (it used to overflow; the sanitizer build
// of this test, tests/sanitize, catches a regression).
TEST_CASE("an empty session gives no chains") {
  TempDir dir;
  const std::string path = dir.file("e.db");
  Live l(path);
  REQUIRE(l.w->close(l.t0 + kSec).ok());
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  Correlator c(1);
  auto none = c.chains(db->get());
  REQUIRE(none.ok());
  CHECK(none->empty());
  REQUIRE(c.analyze(db->get(), l.t0, l.t0 + kSec).ok());
  auto after = c.chains(db->get());
  REQUIRE(after.ok());
  CHECK(after->empty());
}
