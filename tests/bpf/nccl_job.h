// The 4-rank NCCL job of the fleet bpf tests: cw_workload over the fake libnccl, one process
// per rank with RANK and WORLD_SIZE in its environment (as torchrun starts them), rank 2
// entering every all-reduce ~3 ms late.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/bpf/collector_harness.h"

namespace causeway::test {

constexpr int kRanks = 4, kLateRank = 2, kIterations = 300;

inline std::string S(int64_t v) { return std::to_string(v); }

// The 4 rank processes, stopped after init until go_file exists; killed if the test leaves early.
struct Job {
  std::vector<pid_t> pids;     // the ranks, in rank order
  std::vector<bool> reaped;
  std::string go;
  // paused: the ranks wait for run() after init; else they run on at once (mid-run attach).
  explicit Job(const TempDir& dir, bool paused = true, int iterations = kIterations) : go(paused ? dir.file("go") : "") {
    const std::string ready = dir.file("ready"), name = "cwjob-" + S(getpid()) + "-" + S(reinterpret_cast<intptr_t>(this));
    for (int r = 0; r < kRanks; ++r) {
      std::vector<std::string> argv{"/usr/bin/env", "RANK=" + S(r), "WORLD_SIZE=" + S(kRanks), "MASTER_ADDR=10.0.0.1",
                                    "MASTER_PORT=29500", testprog("cw_workload"), "--nccl-job", name, "--nccl-ranks", S(kRanks),
                                    "--ops", "", "--nccl-ops", "allreduce", "--late-rank", S(kLateRank), "--late-ms", "3",
                                    "--iterations", S(iterations), "--latency-us", "200", "--ready-file", ready};
      if (paused) argv.insert(argv.end(), {"--wait-file", go});
      pids.push_back(spawn(argv, dir.file("rank" + S(r) + ".log")));
    }
    // Each rank touches its ready file after ncclCommInitRank returned (a barrier of all 4).
    for (int r = 0; r < kRanks; ++r) wait_for_file(ready + "." + S(r));
    reaped.assign(pids.size(), false);
  }
  void run() {
    if (!go.empty()) std::ofstream(go.c_str()) << "go";
    for (size_t i = 0; i < pids.size(); ++i) {
      reaped[i] = true;
      REQUIRE(wait_exit(pids[i]) == 0);
    }
  }
  ~Job() {
    for (size_t i = 0; i < pids.size(); ++i)
      if (!reaped[i]) {
        ::kill(pids[i], SIGKILL);
        wait_exit(pids[i]);
      }
  }
};

}  // namespace causeway::test
