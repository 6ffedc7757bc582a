// Planted incidents where the GPU waits for the host, under real eBPF (docs/DIAGNOSIS.md):
//   dataloader_starvation  a real CPython training loop (tests/testprogs/training_loop.py) whose
//                          two forked pt_data_worker processes read each batch with random
//                          O_DIRECT reads from a file on disk: the loop blocks on the batch queue
//   host_bound             the same loop doing its own Python preprocessing between steps
//   launch_bound           cw_workload launching 10 kernels of 23 µs per sync, back to back
// Each must come out as its cause with the right victim thread and culprit, and none of the
// three may be reported as another of them.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "tests/bpf/diagnosis_live_support.h"

namespace causeway::test {
namespace {

// A file the workers read with O_DIRECT: on the build folder's disk (TMPDIR may be a tmpfs,
// where O_DIRECT fails), written with incompressible data so every read is a real request.
struct DataFile {
  std::string path;
  explicit DataFile(const std::string& p, size_t mib) : path(p) {
    std::ofstream f(path, std::ios::binary);
    std::mt19937_64 rnd(7);
    std::vector<uint64_t> block(1 << 17);  // 1 MiB
    for (size_t m = 0; m < mib; ++m) {
      for (auto& w : block) w = rnd();
      f.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size() * sizeof(uint64_t)));
    }
  }
  ~DataFile() { std::filesystem::remove(path); }
};

std::vector<std::string> python_loop(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/env", "CW_FAKE_LATENCY_NS=20000", system_python(),
                                source_dir() + "/tests/testprogs/training_loop.py", "--cudart", testprog("libcudart.so.13")};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The steps the loop ran ("steps: N", its last line of output).
int64_t steps_of(const TempDir& dir) {
  const std::string log = read_file(dir.file("w.log"));
  const auto at = log.rfind("steps: ");
  return at == std::string::npos ? -1 : std::stoll(log.substr(at + 7));
}

void check_not_other_pipeline_causes(const json& chains, pid_t pid, const std::string& planted) {
  for (const json& c : chains) {
    if (c.value("pid", 0) != pid) continue;
    for (const char* other : {"dataloader_starvation", "host_bound", "launch_bound"})
      if (planted != other) CHECK_MESSAGE(c.value("cause", "") != other, c.value("summary", ""));
  }
}

}  // namespace

TEST_CASE("dataloader_starvation: DataLoader workers reading from disk starve the training loop") {
  REQUIRE_MESSAGE(!system_python().empty(), "/usr/bin/python3 is installed by scripts/install-deps.sh --tests");
  TempDir dir;
  DataFile data(build_dir() + "/diagnosis_live_data." + S(::getpid()), 32);
  // Time-bound: how many steps fit depends on the disk (random 4 KiB reads take 0.1-2 ms here).
  Traced t = trace_program(dir, python_loop({"--mode", "dataloader", "--data", data.path, "--workers", "2",
                                             "--reads-per-batch", "32", "--iterations", "100000", "--seconds", "3"}));
  const int64_t steps = steps_of(dir);
  REQUIRE(steps >= 20);
  auto workers = q_rows(t.db, "SELECT pid FROM processes WHERE ppid = " + S(t.pid) + " AND comm = 'pt_data_worker'");
  REQUIRE(workers.size() == 2);
  std::set<int64_t> worker_pids{workers[0][0], workers[1][0]};
  // The workers' reads reached the disk, issued by the workers themselves.
  CHECK(q_int(t.db, "SELECT count(*) FROM events WHERE op_id = 500 AND pid IN (" + S(workers[0][0]) + ", " +
                        S(workers[1][0]) + ")") >= steps * 32 / 2);
  json chains = chains_of(t.db);
  INFO(brief(t.db, chains));
  MESSAGE("dataloader case: workload ran " << t.workload_s << " s");
  const json c = find_chain(chains, t.pid, "dataloader_starvation");
  REQUIRE(c.is_object());
  check_strong(c);
  CHECK(c.value("tid", 0) == t.pid);
  CHECK(c.value("where", "") == "between_calls");
  CHECK(worker_pids.count(c["culprit"].value("pid", int64_t{0})) == 1);
  CHECK(c["culprit"].value("comm", "") == "pt_data_worker");
  CHECK(c["culprit"].value("doing", "") == "block_io");
  CHECK(c["culprit"]["workers"].size() == 2);
  CHECK(c.value("summary", "").find("disk reads") != std::string::npos);
  // Most steps waited for a batch.
  CHECK(c.value("calls", 0) >= steps / 2);
  check_not_other_pipeline_causes(chains, t.pid, "dataloader_starvation");
  // The loop's Python line is the call site (Python frames of CPython 3.11).
  REQUIRE(!c["stack"].empty());
  CHECK(c["stack"][0].get<std::string>().find("training_loop.py:") != std::string::npos);
}

TEST_CASE("host_bound: the loop's own Python work between steps keeps the GPU waiting") {
  REQUIRE_MESSAGE(!system_python().empty(), "/usr/bin/python3 is installed by scripts/install-deps.sh --tests");
  TempDir dir;
  Traced t = trace_program(dir, python_loop({"--mode", "host-bound", "--iterations", "100000", "--seconds", "2",
                                             "--work", "40000"}));
  REQUIRE(steps_of(dir) >= 20);
  json chains = chains_of(t.db);
  INFO(brief(t.db, chains));
  MESSAGE("host_bound case: workload ran " << t.workload_s << " s");
  const json c = find_chain(chains, t.pid, "host_bound");
  REQUIRE(c.is_object());
  CHECK(c.value("severity", "") == "HIGH");
  CHECK(c.value("tid", 0) == t.pid);
  CHECK(c.value("where", "") == "between_calls");
  CHECK(!c.contains("culprit"));  // no other process to blame
  CHECK(c.value("op", "") == "cudaMemcpyAsync");  // the work ends where the next step starts
  // Where the host work leads: the Python line of the step that follows it.
  REQUIRE(!c["stack"].empty());
  CHECK(c["stack"][0].get<std::string>().find("training_loop.py:") != std::string::npos);
  CHECK(c["stack"][0].get<std::string>().find("train_step") != std::string::npos);
  check_not_other_pipeline_causes(chains, t.pid, "host_bound");
}

TEST_CASE("launch_bound: tiny kernels launched back to back, the syncs return at once") {
  TempDir dir;
  // 10 launches + 1 sync per iteration, every call 23 µs (the fake runtime's one latency).
  std::string ops;
  for (int i = 0; i < 10; ++i) ops += "launch,";
  ops += "stream_sync";
  Traced t = trace_workload(dir, {"--ops", ops, "--latency-us", "23", "--rate", "0", "--iterations", "12000"});
  json chains = chains_of(t.db);
  INFO(brief(t.db, chains));
  MESSAGE("launch_bound case: workload ran " << t.workload_s << " s");
  const json c = find_chain(chains, t.pid, "launch_bound");
  REQUIRE(c.is_object());
  CHECK(c.value("severity", "") == "HIGH");
  CHECK(c.value("op", "") == "cudaLaunchKernel");
  CHECK(c.value("calls", 0) >= 100000);
  CHECK(c.value("tid", 0) == t.pid);
  CHECK(c.value("summary", "").find("launch-bound") != std::string::npos);
  check_not_other_pipeline_causes(chains, t.pid, "launch_bound");
}

TEST_CASE("graph_recapture: a CUDA graph captured and instantiated every step is named; replaying one is not") {
  TempDir dir;
  // Each step: begin capture, 3 launches into it, end capture (5 ms), instantiate (5 ms), one
  // launch of the new exec, destroy, sync.
  Traced t = trace_workload(dir, {"--ops", "graph_recapture,stream_sync", "--graph-build-us", "5000", "--latency-us", "20",
                                  "--rate", "0", "--iterations", "250"});
  json chains = chains_of(t.db);
  INFO(brief(t.db, chains));
  MESSAGE("graph_recapture case: workload ran " << t.workload_s << " s");
  const json c = find_chain(chains, t.pid, "graph_recapture");
  REQUIRE(c.is_object());
  CHECK(c.value("severity", "") == "HIGH");
  CHECK(c.value("op", "") == "cudaGraphInstantiate");
  CHECK(c.value("calls", 0) >= 240);  // every instantiation after the first launch
  CHECK(c.value("summary", "").find("replaying each only 1.0 times") != std::string::npos);

  // The healthy twin: captured once per thread, then replayed every step.
  TempDir dir2;
  Traced r = trace_workload(dir2, {"--ops", "graph_replay,stream_sync", "--graph-build-us", "5000", "--latency-us", "20",
                                   "--rate", "0", "--iterations", "250"});
  json healthy = chains_of(r.db);
  INFO(brief(r.db, healthy));
  CHECK(find_chain(healthy, r.pid, "graph_recapture").is_null());
  check_not_other_pipeline_causes(healthy, r.pid, "");
}

}  // namespace causeway::test
