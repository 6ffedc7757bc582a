// Runnable waits of chosen threads, and who held their CPUs meanwhile, from the session's switch
// records (docs/INFERENCE.md "Causes keyed to requests", cpu_contention). Read by two request
// cause modules: cpu_contention (every engine thread's waits in a slow part) and nccl_straggler
// (a late rank's own waits before its collective: a rank late only because it could not get a
// CPU is the CPU's, "Claims on one gap").
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "diagnosis/culprit.h"

namespace causeway::requests {

struct CpuWaits {
  std::vector<std::pair<int64_t, int64_t>> waits;  // each runnable wait, clipped to the window
  std::map<uint32_t, double> held;                 // pid -> ns it held a waiting thread's CPU (0: idle)
};

// The waits that a switch-in of a thread of `pids` (only thread `tid` when non-zero) ended
// within (from, to] (plus the look-back a wait may start in), each from its thread's last
// wake-up or preemption, whoever held the CPU before being outside `pids` (a wait behind the
// engine's own threads, the GIL, is not contention from outside).
CpuWaits read_cpu_waits(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids, uint32_t tid, int64_t from, int64_t to);

// Who stole the waits' time: outsiders only (not pid 0, an idle CPU; not `pids`), the tracer
// apart (diagnosis/tracer_pid.h: never a culprit).
struct CpuStolen {
  std::map<uint32_t, double> by_culprit;  // outsiders but the tracer: pid -> ns
  double outsiders_ns = 0;                // by_culprit's sum
  double held_ns = 0;                     // everything held, idle and own threads included
  double tracer_ns = 0;
  // The outsider that held the CPUs longest; 0 when none.
  uint32_t top() const;
};
CpuStolen stolen_by(const CpuWaits& w, const std::vector<uint32_t>& pids, const std::optional<uint32_t>& tracer_pid);

class RequestEvidence;  // diagnosis/request_evidence.h
// cpu_contention's culprit (pid, comm, share of stolen time): the outsider that held the
// CPUs longest (top() must be non-zero), with "tracer_overhead_ms" when the tracer's threads
// held them ≥ 1 ms (docs/INTERFACES.md "Inference requests").
Culprit cpu_contention_culprit(const RequestEvidence& ev, const CpuStolen& stolen);

}  // namespace causeway::requests
