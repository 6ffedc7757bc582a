// queueing, kv_cache_pressure, nccl_straggler, prefill_interference, io_contention and memory_pressure from rows (docs/INFERENCE.md "Causes keyed to requests"):
// requests and the engine's scraped metrics written by the real writer to a real SQLite
// file, then asked through request_latency_json.
#include <doctest/doctest.h>

#include "diagnosis/correlator.h"
#include "diagnosis/request_latency.h"
#include "requests/to_record.h"
#include "tests/unit/request_db.h"
#include "tests/unit/request_rows.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/op_catalog.h"
#include "tracedb/store_writer.h"
#include "diagnosis/rank_inference.h"

using namespace causeway;
using namespace causeway::requests;
using json = nlohmann::json;

namespace {

// Three tokens 20 ms apart, the gap before token `at` (1-based) `gap_ms` long instead.
Request stream(const std::string& id, int64_t start_ms, int64_t ttft_ms, size_t at = 0, int64_t gap_ms = 20) {
  Request r = streamed(id, start_ms, ttft_ms, 4, 20, "t");
  r.prompt_bytes = 200;
  for (size_t i = at; at && i < r.token_ns.size(); ++i) r.token_ns[i] += (gap_ms - 20) * kMs;
  r.last_byte_ns = r.token_ns.back() + kMs;
  return r;
}

// One scrape of a vLLM-shaped endpoint at `ms`.
EngineSampleRecord scrape(int64_t ms, double running, double waiting, double kv, double preemptions) {
  EngineSampleRecord r;
  r.ts_ns = kT0 + ms * kMs;
  r.pid = 100;
  r.engine = "vllm";
  r.url = "http://127.0.0.1:8000/metrics";
  const std::string l = "engine=\"0\",model_name=\"m\"";
  r.samples = {{"vllm:num_requests_running", l, running},
               {"vllm:num_requests_waiting", l, waiting},
               {"vllm:kv_cache_usage_perc", l, kv},
               {"vllm:gpu_cache_usage_perc", l, kv},  // the deprecated twin: not counted twice
               {"vllm:num_preemptions_total", l, preemptions}};
  return r;
}

// 95 quick streams, and five whose second gap (5941..6441 ms) took 500 ms instead of 20.
void five_slow_gaps(StoreWriter& w) {
  for (int i = 0; i < 95; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20)));
  for (int i = 0; i < 5; ++i) w.push_meta(to_record(stream("p" + std::to_string(i), 5900, 20, 2, 500)));
}

}  // namespace

TEST_CASE("queueing: requests that waited for their first token while the engine reported requests waiting") {
  Db db([](StoreWriter& w) {
    // 90 quick requests (TTFT 20 ms) from 0 to 4.5 s, the engine idle-ish: nothing waits.
    for (int i = 0; i < 90; ++i) w.push_meta(to_record(stream("q" + std::to_string(i), i * 50, 20)));
    // A burst at 6 s: ten requests whose first token comes 400..850 ms later.
    for (int i = 0; i < 10; ++i) w.push_meta(to_record(stream("b" + std::to_string(i), 6000, 400 + 50 * i)));
    for (int s = 0; s <= 90; ++s) {
      const int64_t ms = s * 100;
      const bool burst = ms >= 6000 && ms <= 6900;
      w.push_meta(scrape(ms, burst ? 4 : 1, burst ? 6 : 0, 0.2, 0));
    }
  });
  json d = db.ask(Metric::ttft, 0.91);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* q = cause(tail, "queueing");
  REQUIRE(q != nullptr);
  CHECK((*q)["requests"] == 10);  // the burst, and only it
  CHECK((*q)["culprit"]["pid"] == 100);
  CHECK((*q)["culprit"]["waiting_max"] == 6);
  CHECK((*q)["share_time"].get<double>() >= 0.9);
  CHECK(cause(tail, "kv_cache_pressure") == nullptr);  // no preemption
  const json& slowest = d["requests"]["slowest"][0];
  CHECK(slowest["request_id"] == "b9");
  CHECK(slowest["causes"][0]["cause"] == "queueing");
  CHECK(d["engines"].size() == 1);
  CHECK(d["engines"][0]["engine"] == "vllm");
  CHECK(d["engines"][0]["samples"] == 91);

  // The token gaps of running requests are never queueing.
  json itl = db.ask(Metric::itl, 0.9);
  CHECK(cause(itl["requests"]["tail"], "queueing") == nullptr);
}

TEST_CASE("kv_cache_pressure: token gaps of requests stalled while the full cache preempted requests") {
  Db db([](StoreWriter& w) {
    for (int i = 0; i < 95; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20)));
    // Preempted at 6 s: a 500 ms gap between their tokens.
    for (int i = 0; i < 5; ++i) w.push_meta(to_record(stream("p" + std::to_string(i), 5900, 20, 2, 500)));
    for (int s = 0; s <= 90; ++s) {
      const int64_t ms = s * 100;
      const bool full = ms >= 5900 && ms <= 6500;
      w.push_meta(scrape(ms, 4, 0, full ? 0.97 : 0.3, ms < 6000 ? 0 : ms < 6200 ? 2 : 3));
    }
  });
  json d = db.ask(Metric::itl, 0.99);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* k = cause(tail, "kv_cache_pressure");
  REQUIRE(k != nullptr);
  CHECK((*k)["requests"] == 5);
  CHECK((*k)["culprit"]["kv_cache_usage"].get<double>() == doctest::Approx(0.97));
  CHECK((*k)["culprit"]["preemptions"] == 3);
  CHECK((*k)["share_time"].get<double>() >= 0.9);
  CHECK(cause(tail, "queueing") == nullptr);
}

TEST_CASE("engine causes: a full cache with no preemption, or no metrics at all, claims nothing") {
  Db full([](StoreWriter& w) {
    for (int i = 0; i < 95; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20)));
    for (int i = 0; i < 5; ++i) w.push_meta(to_record(stream("s" + std::to_string(i), 6000, 20, 1, 400)));
    for (int s = 0; s <= 90; ++s) w.push_meta(scrape(s * 100, 4, 0, 0.99, 7));  // constant counter
  });
  json d = full.ask(Metric::itl, 0.95);
  CHECK(d["requests"]["tail"]["causes"].empty());
  CHECK(d["requests"]["tail"]["unexplained_share"] == 1.0);

  Db none([](StoreWriter& w) {
    for (int i = 0; i < 10; ++i) w.push_meta(to_record(stream("r" + std::to_string(i), i * 50, 20 + i * 100)));
  });
  d = none.ask(Metric::ttft, 0.5);
  CHECK(d["requests"]["tail"]["causes"].empty());
  CHECK(d["engines"].empty());
}

namespace {

// The API server (100, the requests' server) → EngineCore 101 → two TP workers 102, 103,
// five_slow_gaps, and one all-reduce per 20 ms pass on both ranks, within 0.2 ms of each other
// (jitter, not a straggler), but the pass at 6000 ms: rank 1 enters 430 ms after rank 0.
// before_trace: the workers' ncclCommInitRank ran before the trace, so their collectives carry
// each its own communicator handle and rank -1; `launcher` adds the RANK / WORLD_SIZE /
// MASTER_* the collector read from their environment. Rank 1's probes then went live while it
// was inside a collective: its traced sequence is one behind rank 0's. naming: how the
// workers show (comm "VllmWorker-R"; vLLM's multiproc executor's title; one comm, no title;
// "Worker_TP0" / "Worker_TP1", not vLLM's title; names that share nothing, rank 1 one level
// deeper under a launcher shim 104).
enum class Naming { distinct_comms, vllm_title, untitled, worker_tp, unrelated };
void tp_workers(StoreWriter& w, bool before_trace, bool launcher, Naming naming = Naming::distinct_comms) {
  w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
  if (naming == Naming::unrelated) w.push_meta(ProcessRecord{.pid = 104, .ppid = 101, .comm = "sh"});
  for (uint32_t rank : {0u, 1u}) {
    ProcessRecord p{.pid = 102 + rank, .ppid = 101, .comm = "VllmWorker-" + std::to_string(rank)};
    if (naming == Naming::vllm_title) p.comm = "VLLM::Worker_TP", p.cmdline = "VLLM::Worker_TP" + std::to_string(rank);
    if (naming == Naming::untitled) p.comm = "python3", p.cmdline = "/usr/bin/python3 -c from multiprocessing.spawn import spawn_main";
    if (naming == Naming::worker_tp) p.comm = "Worker_TP" + std::to_string(rank), p.cmdline = "python3 worker.py";
    if (naming == Naming::unrelated) {
      p.comm = rank == 0 ? "alpha" : "zeta-svc";
      p.cmdline = rank == 0 ? "/opt/a/bin/alpha" : "/srv/z/zeta --serve";
      if (rank == 1) p.ppid = 104;
    }
    if (launcher)
      p.launcher_rank = LauncherRank{static_cast<int32_t>(rank), 2, static_cast<int32_t>(rank), "RANK", "master:127.0.0.1:29500"};
    w.push_meta(p);
  }
  five_slow_gaps(w);
  const uint16_t all_reduce = find_op("ncclAllReduce")->id;
  for (int64_t seq = 0; seq < 500; ++seq) {
    const int64_t t = kT0 + seq * 20 * kMs;
    const bool late = seq == 300;
    // A rank calls its collectives one after another: no pass starts while the late one waits.
    if (seq > 300 && t <= kT0 + 6430 * kMs) continue;
    for (uint32_t rank : {0u, 1u}) {
      if (before_trace && rank == 1 && seq == 0) continue;
      CallRecord c;
      c.pid = c.tid = 102 + rank;
      c.op = all_reduce;
      c.ts_ns = t + (rank == 1 ? (late ? 430 * kMs : 200'000) : 0);
      c.dur_ns = (late ? 430 * kMs + 100'000 : 300'000) - (c.ts_ns - t);
      // buffer, comm hash (traced init) or handle, rank, nranks, seq
      if (before_trace) c.a = {0, rank == 0 ? 0x7f00aa000 : 0x7f00bb000, -1, 0, rank == 0 ? seq : seq - 1, 0};
      else c.a = {0, 0xabc, rank, 2, seq, 0};
      w.push_wait(c);
    }
  }
}

// The tail names rank 1 (pid 103) for the 430 of each gap's 480 ms above the median; its
// rank came from `source`, and is not given when that is only the workers' order (structure,
// or a communicator found from the collectives' timing).
void check_late_rank(const json& d, const std::string& source, const std::string& comm = "VllmWorker-1") {
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* n = cause(tail, "nccl_straggler");
  REQUIRE(n != nullptr);
  CHECK((*n)["requests"] == 5);
  CHECK((*n)["culprit"]["pid"] == 103);
  CHECK((*n)["culprit"]["comm"] == comm);
  CHECK((*n)["culprit"]["rank_source"] == source);
  if (source == "structural" || source == "collective_timing") CHECK_FALSE((*n)["culprit"].contains("rank"));
  else CHECK((*n)["culprit"]["rank"] == 1);
  CHECK((*n)["culprit"]["nranks"] == 2);
  CHECK((*n)["share_time"].get<double>() == doctest::Approx(430.0 / 480).epsilon(0.02));
  CHECK(d["requests"]["slowest"][0]["causes"][0]["cause"] == "nccl_straggler");
  CHECK(d["requests"]["slowest"][0]["causes"][0]["lost_ms"].get<double>() == doctest::Approx(430).epsilon(0.01));
}

}  // namespace

TEST_CASE("nccl_straggler: token gaps of a forward pass whose all-reduce waited for a late tensor-parallel rank") {
  Db db([](StoreWriter& w) { tp_workers(w, false, false); });
  check_late_rank(db.ask(Metric::itl, 0.99), "init");
}

TEST_CASE("nccl_straggler: a communicator formed before the trace, its ranks resolved from the launcher's environment") {
  Db db([](StoreWriter& w) { tp_workers(w, true, true); });
  check_late_rank(db.ask(Metric::itl, 0.99), "RANK");
}

TEST_CASE("nccl_straggler: vLLM multiproc-executor workers formed before the trace, ranked by their process titles") {
  Db db([](StoreWriter& w) { tp_workers(w, true, false, Naming::vllm_title); });
  check_late_rank(db.ask(Metric::itl, 0.99), "process_title", "VLLM::Worker_TP");
}

TEST_CASE("nccl_straggler: untitled workers of one engine with one comm: the late pid is named, its rank is not") {
  Db db([](StoreWriter& w) { tp_workers(w, true, false, Naming::untitled); });
  check_late_rank(db.ask(Metric::itl, 0.99), "structural", "python3");
}

// No traced init, no launcher variable, no title, no same-name siblings, handles that differ:
// the communicator comes from the collectives themselves (their returns, call after call), the
// late rank from the entry times; its rank number is not known and not given. (Before issue
// 37 these grouped nothing and the straggler went unnamed.)
TEST_CASE("nccl_straggler: workers of different comms, no rank from any source: the communicator from the collectives' timing") {
  Db db([](StoreWriter& w) { tp_workers(w, true, false); });
  check_late_rank(db.ask(Metric::itl, 0.99), "collective_timing");
}

TEST_CASE("nccl_straggler: workers named Worker_TP0 / Worker_TP1 (not vLLM's title), no init traced, handles that differ") {
  Db db([](StoreWriter& w) { tp_workers(w, true, false, Naming::worker_tp); });
  check_late_rank(db.ask(Metric::itl, 0.99), "collective_timing", "Worker_TP1");
}

TEST_CASE("nccl_straggler: workers whose names share nothing, one a level deeper under the engine: still one communicator") {
  Db db([](StoreWriter& w) { tp_workers(w, true, false, Naming::unrelated); });
  check_late_rank(db.ask(Metric::itl, 0.99), "collective_timing", "zeta-svc");
}

namespace {

constexpr uint32_t kLateRankHog = 901;

// The late pass at 6000 ms of tp_workers, with rank 1's thread (103) on CPU 1: `preempted`,
// it was switched out runnable at 6000 ms by a hog (901) that held the CPU until 6430 ms, when
// rank 1 got it back and entered the all-reduce; else it ran (on CPU) all along, as a rank
// whose own work is longer does.
void late_rank_cpu(StoreWriter& w, bool preempted) {
  tp_workers(w, true, false, Naming::worker_tp);
  w.push_meta(ProcessRecord{.pid = kLateRankHog, .ppid = 1, .comm = "hog_spin"});
  if (!preempted) return;
  auto sw = [&](int64_t ms, uint32_t prev, uint32_t next) {
    SwitchRecord r;
    r.ts_ns = kT0 + ms * kMs;
    r.cpu = 1;
    r.prev_tid = r.prev_pid = prev;
    r.next_tid = r.next_pid = next;
    w.push_wait(r);  // prev_state 0: runnable, preempted
  };
  sw(6000, 103, kLateRankHog);
  sw(6430, kLateRankHog, 103);
}

}  // namespace

// One rule for one gap (docs/INFERENCE.md "Claims on one gap"): a rank late only because it
// could not get a CPU is cpu_contention, the hog its culprit and the rank its victim, where
// the late rank's claim would have been; a rank late on its own work stays nccl_straggler.
TEST_CASE("a rank late only for want of a CPU: cpu_contention names the hog, the late rank its victim") {
  Db db([](StoreWriter& w) { late_rank_cpu(w, true); });
  const json d = db.ask(Metric::itl, 0.99);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  CHECK(cause(tail, "nccl_straggler") == nullptr);
  const json* c = cause(tail, "cpu_contention");
  REQUIRE(c != nullptr);
  CHECK((*c)["culprit"]["pid"] == kLateRankHog);
  CHECK((*c)["culprit"]["comm"] == "hog_spin");
  CHECK((*c)["culprit"]["victim"]["pid"] == 103);
  CHECK((*c)["culprit"]["victim"]["comm"] == "Worker_TP1");
  // The 430 ms the other rank waited, once: the engine threads' own waits (rank 1's, the same
  // time) are not added to it.
  CHECK((*c)["share_time"].get<double>() == doctest::Approx(430.0 / 480).epsilon(0.02));
  CHECK(d["requests"]["slowest"][0]["causes"].size() == 1);
  CHECK(d["requests"]["slowest"][0]["causes"][0]["lost_ms"].get<double>() == doctest::Approx(430).epsilon(0.01));
}

TEST_CASE("a rank late on its own work (on CPU) stays nccl_straggler, whatever else ran on the host") {
  Db db([](StoreWriter& w) { late_rank_cpu(w, false); });
  check_late_rank(db.ask(Metric::itl, 0.99), "collective_timing", "Worker_TP1");
  CHECK(cause(db.ask(Metric::itl, 0.99)["requests"]["tail"], "cpu_contention") == nullptr);
}

// A rank late in every collective, asleep 8 ms before each (its own wait), on a host whose other
// jobs then hold its CPU ~6 ms more in 40 of 100: those 40 are its CPU's (cpu_contention, the
// hog named), and it is still the communicator's straggler on the other 60 — late in all of
// them. (Counted over its own 60 only, 60 % < the 75 % a 2-rank straggler needs: no chain, as
// the live engine late_rank test met under a compiler's load.)
TEST_CASE("nccl_straggler at call level: a rank late every time, for its CPU in 40% of them, is still the straggler") {
  constexpr uint32_t kHog = 901;
  Db db([](StoreWriter& w) {
    w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
    for (uint32_t rank : {0u, 1u})
      w.push_meta(ProcessRecord{.pid = 102 + rank, .ppid = 101, .comm = "Worker_TP" + std::to_string(rank)});
    w.push_meta(ProcessRecord{.pid = kHog, .ppid = 1, .comm = "cc1plus"});
    const uint16_t all_reduce = find_op("ncclAllReduce")->id;
    auto sw = [&](int64_t ts, uint32_t prev, uint32_t next, uint8_t prev_state) {
      SwitchRecord r;
      r.ts_ns = ts;
      r.cpu = 1;
      r.prev_tid = r.prev_pid = prev;
      r.next_tid = r.next_pid = next;
      r.prev_state = prev_state;
      w.push_wait(r);
    };
    for (int64_t seq = 0; seq < 100; ++seq) {
      const int64_t t = kT0 + 1000 * kMs + seq * 20 * kMs, enter = t + 8 * kMs + 50'000;
      const bool for_cpu = seq % 5 < 2;
      sw(t - kMs, 103, 0, 1);  // rank 1 goes to sleep
      const int64_t woken = for_cpu ? t + 2 * kMs : t + 8 * kMs - 20'000;
      w.push_wait(WakeupRecord{.ts_ns = woken - 10'000, .tid = 103, .pid = 103, .target_cpu = 1});
      sw(woken, 0, 103, 0);
      if (for_cpu) {
        sw(woken + 100'000, 103, kHog, 0);  // preempted, runnable
        sw(t + 8 * kMs, kHog, 103, 0);
      }
      for (uint32_t rank : {0u, 1u}) {
        CallRecord c;
        c.pid = c.tid = 102 + rank;
        c.op = all_reduce;
        c.ts_ns = rank == 0 ? t : enter;
        c.dur_ns = enter + 100'000 - c.ts_ns;
        c.a = {0, 0xabc, rank, 2, seq, 0};
        w.push_wait(c);
      }
    }
  });
  auto h = open_read_only(db.path);
  REQUIRE(h);
  auto chains = diagnose_session(h->get(), 1);
  REQUIRE(chains);
  bool straggler = false, hog = false;
  for (const auto& c : *chains) {
    const json d = json::parse(c.doc);
    CAPTURE(d.dump());
    if (c.cause == "nccl_straggler") {
      straggler = true;
      CHECK(d["culprit"]["pid"] == 103);
      CHECK(d["calls"] == 60);
      CHECK(d["culprit"]["late_share"].get<double>() == doctest::Approx(0.6));
      CHECK(d["culprit"]["own_cause"] == "sleeping");
    }
    if (c.cause == "cpu_contention" && d["culprit"].value("pid", 0) == static_cast<int>(kHog)) {
      hog = true;
      CHECK(d["pid"] == 103);
      CHECK(d["calls"] == 40);
    }
  }
  CHECK(straggler);
  CHECK(hog);
}

namespace {

// The server (100) → EngineCore 101, five_slow_gaps, and the engine core's thread in D state
// from 6000 to 6400 ms. `also` adds what it waited on.
template <typename F>
void d_state_db(StoreWriter& w, F also) {
  w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
  five_slow_gaps(w);
  SwitchRecord out;
  out.ts_ns = kT0 + 6000 * kMs;
  out.prev_tid = out.prev_pid = 101;
  out.prev_state = 2;  // D
  w.push_wait(out);
  w.push_wait(WakeupRecord{.ts_ns = kT0 + 6400 * kMs, .tid = 101, .pid = 101});
  SwitchRecord in;
  in.ts_ns = kT0 + 6400 * kMs + 50'000;
  in.next_tid = in.next_pid = 101;
  w.push_wait(in);
  also(w);
}

CallRecord host_event(uint16_t op, uint32_t pid, int64_t from_ms, int64_t to_ms, int64_t a0) {
  CallRecord c;
  c.pid = c.tid = pid;
  c.op = op;
  c.ts_ns = kT0 + from_ms * kMs;
  c.dur_ns = (to_ms - from_ms) * kMs;
  c.a = {a0, 0, 0, 0, 0, 0};
  return c;
}

}  // namespace

TEST_CASE("io_contention: token gaps while the engine's thread waited in D state under another process's disk I/O") {
  Db db([](StoreWriter& w) {
    d_state_db(w, [](StoreWriter& x) {
      x.push_meta(ProcessRecord{.pid = 900, .ppid = 1, .comm = "tar"});
      x.push_wait(host_event(find_op("block_rq")->id, 900, 5990, 6420, 1 << 20));
    });
  });
  json d = db.ask(Metric::itl, 0.99);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* io = cause(tail, "io_contention");
  REQUIRE(io != nullptr);
  CHECK((*io)["requests"] == 5);
  CHECK((*io)["culprit"]["pid"] == 900);
  CHECK((*io)["culprit"]["comm"] == "tar");
  CHECK((*io)["culprit"]["own_io"] == false);
  // 400 ms of each gap's 480 ms above the median: the D wait, all of it under tar's I/O.
  CHECK((*io)["share_time"].get<double>() == doctest::Approx(400.0 / 480).epsilon(0.02));
  CHECK(cause(tail, "memory_pressure") == nullptr);
  CHECK(d["requests"]["slowest"][0]["causes"][0]["cause"] == "io_contention");
}

TEST_CASE("memory_pressure: a D wait with no disk I/O during another process's page-allocation burst") {
  Db db([](StoreWriter& w) {
    d_state_db(w, [](StoreWriter& x) {
      x.push_meta(ProcessRecord{.pid = 901, .ppid = 1, .comm = "stress-ng"});
      x.push_wait(host_event(find_op("page_alloc")->id, 901, 6000, 6300, 100'000));  // ≈ 1.3 GiB/s
    });
  });
  json d = db.ask(Metric::itl, 0.99);
  const json& tail = d["requests"]["tail"];
  CAPTURE(tail.dump());
  const json* m = cause(tail, "memory_pressure");
  REQUIRE(m != nullptr);
  CHECK((*m)["requests"] == 5);
  CHECK((*m)["culprit"]["pid"] == 901);
  CHECK((*m)["culprit"]["comm"] == "stress-ng");
  CHECK((*m)["culprit"]["pages"] == 100'000);
  CHECK((*m)["share_time"].get<double>() == doctest::Approx(400.0 / 480).epsilon(0.02));
  CHECK(cause(tail, "io_contention") == nullptr);

  // The same D wait with neither I/O nor an allocation burst is not claimed by either.
  Db bare([](StoreWriter& w) { d_state_db(w, [](StoreWriter&) {}); });
  const json t = bare.ask(Metric::itl, 0.99)["requests"]["tail"];
  CHECK(cause(t, "memory_pressure") == nullptr);
  CHECK(cause(t, "io_contention") == nullptr);
}

namespace {

// The requests of the prefill cases: 95 quick streams, five whose second gap (5941..6441 ms)
// took 500 ms, and a long request (16 kB prompt) read at 5930 ms whose first token came at
// 6445 ms: the engine ran its prefill during those gaps.
void requests_with_a_long_prefill(StoreWriter& w) {
  w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
  five_slow_gaps(w);
  Request big = streamed("long-1", 5929, 515, 4, 20, "t");
  big.prompt_bytes = 16000;
  w.push_meta(to_record(big));
}

// The engine core's passes: one every 20 ms (two launches, a 15 ms sync), and from
// 5940 ms one of `long_ms` (the long prompt's prefill), then on.
void engine_passes(StoreWriter& w, int64_t long_ms) {
  int64_t t = 0;
  while (t < 10'000) {
    const bool prefill = t >= 5940 && t < 5960;
    const int64_t len = prefill ? long_ms : 15;
    for (int k = 0; k < 2; ++k) {
      CallRecord c;
      c.pid = c.tid = 101;
      c.op = find_op("cudaLaunchKernel")->id;
      c.ts_ns = kT0 + t * kMs + k * 10'000;
      c.dur_ns = 5'000;
      w.push_wait(c);
    }
    CallRecord s;
    s.pid = s.tid = 101;
    s.op = find_op("cudaStreamSynchronize")->id;
    s.ts_ns = kT0 + t * kMs + 30'000;
    s.dur_ns = len * kMs - 30'000;
    w.push_wait(s);
    t += prefill ? long_ms + 1 : 20;
  }
}

}  // namespace

TEST_CASE("prefill_interference: the stalled gaps overlap a forward pass far longer than the median, during a long prefill") {
  Db db([](StoreWriter& w) {
    requests_with_a_long_prefill(w);
    engine_passes(w, 490);
  });
  const json d = db.ask(Metric::itl, 0.99)["requests"];
  CAPTURE(d["tail"].dump());
  const json* p = cause(d["tail"], "prefill_interference");
  REQUIRE(p != nullptr);
  const json& k = (*p)["culprit"];
  CHECK(k["requests"] == json::array({"long-1"}));
  CHECK(k["pid"] == 101);
  CHECK(k["basis"] == "forward_pass");
  CHECK(k["pass_ms"].get<double>() == doctest::Approx(490).epsilon(0.01));
  CHECK(k["median_pass_ms"].get<double>() == doctest::Approx(15).epsilon(0.01));
  // Each 500 ms gap (480 ms above the median) lost the pass's 475 ms above the median pass.
  CHECK((*p)["share_time"].get<double>() == doctest::Approx(475.0 / 480).epsilon(0.02));
  CHECK(d["slowest"][0]["causes"][0]["cause"] == "prefill_interference");
}

TEST_CASE("prefill_interference: a long prompt with no long forward pass during the gap is not the cause") {
  // The engine's passes stay 15 ms through the stall: whatever held the tokens back, it was
  // not a prefill on the GPU.
  Db db([](StoreWriter& w) {
    requests_with_a_long_prefill(w);
    engine_passes(w, 15);
  });
  const json d = db.ask(Metric::itl, 0.99)["requests"];
  CAPTURE(d["tail"].dump());
  CHECK(cause(d["tail"], "prefill_interference") == nullptr);
}

TEST_CASE("prefill_interference: without delimited passes, the long request's prefill time itself, said so") {
  // No CUDA call traced (or no sync): the rule falls back to the prompt bytes.
  Db db([](StoreWriter& w) { requests_with_a_long_prefill(w); });
  const json d = db.ask(Metric::itl, 0.99)["requests"];
  CAPTURE(d["tail"].dump());
  const json* p = cause(d["tail"], "prefill_interference");
  REQUIRE(p != nullptr);
  CHECK((*p)["culprit"]["basis"] == "prompt_bytes");
  CHECK((*p)["culprit"]["requests"] == json::array({"long-1"}));
  CHECK_FALSE((*p)["culprit"].contains("pass_ms"));
  CHECK((*p)["share_time"].get<double>() >= 0.9);
}
