// CUDA graph probes under real eBPF: stream capture, instantiation, launch and exec destroy,
// through the runtime and the driver. A graph re-captured every step and one captured once and
// replayed must be told apart from the trace alone: exact per-op counts, the exec handle an
// instantiation wrote is the one the following launch ran, capture carries its stream.
#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <map>
#include <utility>

#include "bpf/events.h"
#include "tests/bpf/collector_harness.h"

namespace causeway::test {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

std::map<int64_t, int64_t> op_counts(const std::string& db, pid_t pid) {
  std::map<int64_t, int64_t> m;
  for (auto& r : q_rows(db, "SELECT op_id, count(*) FROM events WHERE pid = " + S(pid) + " GROUP BY op_id")) m[r[0]] = r[1];
  return m;
}

// One API level's graph ops (runtime or driver) and the kernel launch captured with them.
struct GraphOps {
  int begin, end, instantiate, launch, destroy, kernel;
};
constexpr GraphOps kRuntime{CW_OP_CUDA_STREAM_BEGIN_CAPTURE, CW_OP_CUDA_STREAM_END_CAPTURE, CW_OP_CUDA_GRAPH_INSTANTIATE,
                            CW_OP_CUDA_GRAPH_LAUNCH, CW_OP_CUDA_GRAPH_EXEC_DESTROY, CW_OP_CUDA_LAUNCH_KERNEL};
constexpr GraphOps kDriver{CW_OP_CU_STREAM_BEGIN_CAPTURE, CW_OP_CU_STREAM_END_CAPTURE,
                           CW_OP_CU_GRAPH_INSTANTIATE_WITH_FLAGS, CW_OP_CU_GRAPH_LAUNCH, CW_OP_CU_GRAPH_EXEC_DESTROY,
                           CW_OP_CU_LAUNCH_KERNEL};

// Rows of op in process pid for which `cond` (over the row e) holds.
int64_t rows(const std::string& db, pid_t pid, int op, const std::string& cond = "1") {
  return q_int(db, "SELECT count(*) FROM events e WHERE e.pid = " + S(pid) + " AND e.op_id = " + S(op) + " AND " + cond);
}

// The first call of op on e's thread after e.
std::string next_call(int op, const std::string& col) {
  return "(SELECT f." + col + " FROM events f WHERE f.tid = e.tid AND f.op_id = " + S(op) +
         " AND f.ts_ns > e.ts_ns ORDER BY f.ts_ns LIMIT 1)";
}

void check_recaptured(const std::string& db, pid_t pid, const GraphOps& g, int64_t steps, int64_t exec_base) {
  auto counts = op_counts(db, pid);
  for (int op : {g.begin, g.end, g.instantiate, g.launch, g.destroy}) {
    CAPTURE(op);
    CHECK(counts[op] == steps);
  }
  CHECK(counts[g.kernel] == 3 * steps);
  // Capture: begin and end carry the thread's stream (0x1000 + thread index), as the kernels
  // launched into it do; begin the mode (0, global).
  CHECK(rows(db, pid, g.begin, "e.a3 BETWEEN 4096 AND 4097 AND e.a0 = 0 AND e.ret = 0") == steps);
  CHECK(rows(db, pid, g.begin, "e.a3 = " + next_call(g.end, "a3")) == steps);
  CHECK(rows(db, pid, g.begin, "e.a3 = " + next_call(g.kernel, "a3")) == steps);
  // The graph the end of capture wrote is the one instantiated next; a new one every step.
  CHECK(rows(db, pid, g.end, "e.a2 != 0 AND e.a2 = " + next_call(g.instantiate, "a2")) == steps);
  CHECK(q_int(db, "SELECT count(DISTINCT a2) FROM events WHERE pid = " + S(pid) + " AND op_id = " + S(g.end)) == steps);
  // The exec an instantiation wrote (the fake's handles start at exec_base) is the one the
  // next launch runs and the next destroy frees: launches count per exec, one each here.
  CHECK(rows(db, pid, g.instantiate, "e.ret = 0 AND e.a1 >= " + S(exec_base) + " AND e.a1 < " + S(exec_base + (1ll << 32))) ==
        steps);
  CHECK(rows(db, pid, g.instantiate, "e.a1 = " + next_call(g.launch, "a1")) == steps);
  CHECK(rows(db, pid, g.instantiate, "e.a1 = " + next_call(g.destroy, "a1")) == steps);
  CHECK(rows(db, pid, g.launch, "e.a3 BETWEEN 4096 AND 4097") == steps);
  CHECK(q_int(db, "SELECT count(*) FROM (SELECT a1 FROM events WHERE pid = " + S(pid) + " AND op_id = " + S(g.launch) +
                      " GROUP BY a1 HAVING count(*) = 1)") == steps);
  // Building costs what the fake was told (2 ms) where a launch costs microseconds.
  CHECK(q_int(db, "SELECT min(dur_ns) FROM events WHERE pid = " + S(pid) + " AND op_id = " + S(g.instantiate)) >= 2'000'000);
  CHECK(q_int(db, "SELECT min(dur_ns) FROM events WHERE pid = " + S(pid) + " AND op_id = " + S(g.end)) >= 2'000'000);
  auto launches = q_rows(db, "SELECT dur_ns FROM events WHERE pid = " + S(pid) + " AND op_id = " + S(g.launch) + " ORDER BY dur_ns");
  REQUIRE(launches.size() == static_cast<size_t>(steps));
  CHECK(launches[launches.size() / 2][0] < 1'000'000);
}

// cw_workload run to its exit under `causeway trace <tracer_args> --pid <it>`, the trace then
// stopped. The workload loads its libraries and waits for the trace: --pid keeps other
// processes on a shared host (their libraries, calls and drops) out of the session.
struct TracedRun {
  pid_t pid;
  std::string db;
  std::string log;  // the tracer's
};
TracedRun run_traced(const TempDir& dir, std::vector<std::string> tracer_args,
                     const std::vector<std::string>& workload_args) {
  const std::string loaded = dir.file("loaded"), go = dir.file("go");
  std::vector<std::string> argv{testprog("cw_workload"), "--ready-file", loaded, "--wait-file", go};
  argv.insert(argv.end(), workload_args.begin(), workload_args.end());
  struct Reaper {  // a workload left waiting when the trace failed to start
    pid_t pid;
    ~Reaper() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      wait_exit(pid);
    }
  } workload{spawn(argv, dir.file("w.log"))};
  wait_for_file(loaded);
  // Every launch as its own row (the checks read each launch's exec and stream): fast launches
  // are otherwise counted in the kernel (docs/COLLECTOR.md, --record-all).
  tracer_args.insert(tracer_args.end(), {"--pid", S(workload.pid), "--record-all"});
  Tracer t(dir, tracer_args);
  { std::ofstream(go.c_str()) << "go"; }
  const pid_t pid = std::exchange(workload.pid, -1);
  REQUIRE(wait_exit(pid) == 0);
  sleep_ms(300);
  const int stopped = t.stop(SIGINT);
  INFO(t.log());
  REQUIRE(stopped == 0);
  return {pid, t.db(), t.log()};
}

const std::vector<std::string> kFakeLibs{"--lib", testprog("libcudart.so.13"), "--lib", testprog("libcuda.so.1"), "--no-stack"};

void check_nothing_lost(const std::string& db) {
  for (const char* c : {"dropped_ring", "dropped_writer", "unpaired_returns", "dropped_nesting", "dropped_slot_busy"}) {
    CAPTURE(c);
    CHECK(q_int(db, std::string("SELECT value FROM collector_stats WHERE name = '") + c + "'") == 0);
  }
}

}  // namespace

TEST_CASE("a graph re-captured every step: counts, the exec each launch ran, capture's stream, failures read no handle") {
  TempDir dir;
  const int threads = 2, iters = 40;
  const auto [pid, db, log] = run_traced(dir, kFakeLibs,
                                    {"--threads", S(threads), "--iterations", S(iters), "--graph-build-us", "2000", "--ops",
                                     "graph_recapture,stream_sync,cu_graph_recapture,graph_instantiate_fail"});
  INFO(log);
  const int64_t n = threads * iters;

  {
    INFO("runtime");
    check_recaptured(db, pid, kRuntime, n, 0x6e0000000000);
  }
  {
    INFO("driver");
    check_recaptured(db, pid, kDriver, n, 0x5e0000000000);
  }
  // A failed instantiation is recorded with its error and no exec: the workload's exec
  // variable held 0x5e5e, and the return probe reads it only on success.
  CHECK(rows(db, pid, CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS) == n);
  CHECK(rows(db, pid, CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS, "e.ret = 1 AND e.a1 = 0 AND e.a2 = 0") == n);
  {
    // v_cuda_calls names the graph and the exec; capture and instantiation are graph_build.
    const std::string P = S(pid);
    CHECK(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE pid = " + P + " AND op = 'cudaGraphLaunch' AND family = 'graph' "
                    "AND graph_exec IN (SELECT graph_exec FROM v_cuda_calls WHERE pid = " + P + " AND op = 'cudaGraphInstantiate')") == n);
    CHECK(q_int(db, "SELECT count(*) FROM v_cuda_calls i JOIN v_cuda_calls c ON c.graph = i.graph AND c.pid = i.pid "
                    "WHERE i.pid = " + P + " AND i.op = 'cuGraphInstantiateWithFlags' AND c.op = 'cuStreamEndCapture'") == n);
    // Per step: begin, end, instantiate, destroy at both levels, and the failed instantiation.
    CHECK(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE pid = " + P + " AND family = 'graph_build'") == (4 + 4 + 1) * n);
    CHECK(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE pid = " + P + " AND family = 'graph_build' AND "
                    "op IN ('cudaStreamBeginCapture', 'cuStreamBeginCapture') AND (graph_exec IS NOT NULL OR graph IS NOT NULL)") == 0);
  }
  check_nothing_lost(db);
}

TEST_CASE("a graph captured once and replayed: one capture per thread, every launch runs that thread's exec") {
  TempDir dir;
  const int threads = 2, iters = 60;
  const auto [pid, db, log] = run_traced(dir, kFakeLibs,
                                    {"--threads", S(threads), "--iterations", S(iters), "--graph-build-us", "2000", "--ops",
                                     "graph_replay,stream_sync,cu_graph_replay"});
  INFO(log);
  auto counts = op_counts(db, pid);
  struct Level {
    int begin, end, instantiate, launch, kernel;
  };
  for (Level g : {Level{CW_OP_CUDA_STREAM_BEGIN_CAPTURE, CW_OP_CUDA_STREAM_END_CAPTURE,
                        CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS, CW_OP_CUDA_GRAPH_LAUNCH, CW_OP_CUDA_LAUNCH_KERNEL},
                  Level{CW_OP_CU_STREAM_BEGIN_CAPTURE, CW_OP_CU_STREAM_END_CAPTURE, CW_OP_CU_GRAPH_INSTANTIATE_WITH_FLAGS,
                        CW_OP_CU_GRAPH_LAUNCH, CW_OP_CU_LAUNCH_KERNEL}}) {
    CAPTURE(g.launch);
    CHECK(counts[g.begin] == threads);
    CHECK(counts[g.end] == threads);
    CHECK(counts[g.instantiate] == threads);
    CHECK(counts[g.kernel] == 3 * threads);
    CHECK(counts[g.launch] == threads * iters);
    // Per exec: the thread that instantiated it launched it iters times, nobody else did.
    auto per_exec = q_rows(db, "SELECT i.a1, count(l.a1), count(DISTINCT l.tid), min(l.tid = i.tid) FROM events i "
                               "JOIN events l ON l.op_id = " + S(g.launch) + " AND l.a1 = i.a1 AND l.pid = i.pid "
                               "WHERE i.pid = " + S(pid) + " AND i.op_id = " + S(g.instantiate) + " GROUP BY i.a1");
    REQUIRE(per_exec.size() == static_cast<size_t>(threads));
    for (const auto& r : per_exec) {
      CHECK(r[0] != 0);
      CHECK(r[1] == iters);
      CHECK(r[2] == 1);
      CHECK(r[3] == 1);
    }
  }
  CHECK(counts[CW_OP_CUDA_GRAPH_INSTANTIATE] == 0);
  CHECK(counts[CW_OP_CUDA_GRAPH_EXEC_DESTROY] == 0);
  check_nothing_lost(db);
}

TEST_CASE("the real CUDA 13 libcudart: graph probes fire and record the stream, calls fail fast without a driver") {
  const std::string real = "/usr/local/cuda/lib64/libcudart.so.13";  // the toolkit's conventional location
  if (!file_exists(real)) {
    MESSAGE("no CUDA 13 toolkit at /usr/local/cuda: real-library case skipped");
    return;
  }
  TempDir dir;
  const int iters = 20;
  const auto [pid, db, log] = run_traced(dir, {"--lib", real, "--no-stack"},
                                    {"--cudart", real, "--iterations", S(iters), "--ops", "graph_recapture,graph_instantiate_fail"});
  INFO(log);
  auto counts = op_counts(db, pid);
  for (int op : {CW_OP_CUDA_STREAM_BEGIN_CAPTURE, CW_OP_CUDA_STREAM_END_CAPTURE, CW_OP_CUDA_GRAPH_INSTANTIATE,
                 CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS, CW_OP_CUDA_GRAPH_LAUNCH, CW_OP_CUDA_GRAPH_EXEC_DESTROY}) {
    CAPTURE(op);
    CHECK(counts[op] == iters);
    // No driver: every call fails, so no handle was written and none is read.
    CHECK(rows(db, pid, op, "e.ret != 0 AND e.a1 = 0") == iters);
  }
  CHECK(counts[CW_OP_CUDA_LAUNCH_KERNEL] == 3 * iters);
  CHECK(rows(db, pid, CW_OP_CUDA_STREAM_BEGIN_CAPTURE, "e.a3 = 4096") == iters);
  CHECK(rows(db, pid, CW_OP_CUDA_STREAM_END_CAPTURE, "e.a3 = 4096 AND e.a2 = 0") == iters);
}

}  // namespace causeway::test
