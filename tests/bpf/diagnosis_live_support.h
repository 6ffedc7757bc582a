// Shared by the live diagnosis tests (tests/bpf/test_diagnosis_live*.cpp): run a planted
// incident under the real `causeway trace`, then read `causeway explain --json` back.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/bpf/collector_harness.h"

namespace causeway::test {

using json = nlohmann::json;

inline std::string S(int64_t v) { return std::to_string(v); }

// cw_workload (tests/testprogs) with these arguments.
std::vector<std::string> workload(std::vector<std::string> args);

struct Traced {
  pid_t pid = -1;  // the workload
  std::string db;
  std::string log;  // the tracer's
  double workload_s = 0;
};

// Single-process incidents: `argv` (a program taking --ready-file/--wait-file) loads its
// libraries and waits; `causeway trace --pid` attaches to it alone (other workloads on the
// host stay out; its forked children are followed), then it runs to completion.
Traced trace_program(const TempDir& dir, std::vector<std::string> argv,
                     const std::vector<std::string>& tracer_args = {"--lib", testprog("libcudart.so.13")});
// trace_program of cw_workload.
Traced trace_workload(const TempDir& dir, std::vector<std::string> args);

// `causeway explain --json` of the DB's latest session: its chains.
json explain(const std::string& db);
// The chains of the traced session: the live ones, else diagnosed here.
json chains_of(const std::string& db);
// One line per chain, with the culprit's command line, for failure messages.
std::string brief(const std::string& db, const json& chains);
// The first chain (explain's order) with victim pid and this cause; null when none.
json find_chain(const json& chains, pid_t pid, const std::string& cause);
// Time the correlator could not attribute (gpu_wait with no other GPU process, unknown) stays LOW.
void check_no_unexplained(const json& chains, pid_t pid);
// A chain worth acting on: not LOW, with evidence, calls, a summary and a culprit object.
void check_strong(const json& c);

// A CPython to run tests/testprogs/training_loop.py with: Debian's /usr/bin/python3 (the
// interpreter most GPU hosts run PyTorch on), "" when absent.
std::string system_python();

}  // namespace causeway::test
