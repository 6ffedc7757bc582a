// `cpu_contention` keyed to requests: the engine's threads were runnable but off CPU during the
// slow part; the culprit is who held their CPUs meanwhile, by time, never the tracer
// (docs/INFERENCE.md "Causes keyed to requests", docs/DIAGNOSIS.md "The tracer is never a
// culprit").
#pragma once

#include <string>
#include <vector>

#include "diagnosis/causes/request_cause.h"

namespace causeway::requests {

struct CpuContentionRequestCause {
  static constexpr RequestCause id = RequestCause::cpu_contention;
  static constexpr std::string_view name = "cpu_contention";
  static constexpr ClaimTier tier = ClaimTier::host_state;
  static const char* recommendation(const Culprit& culprit);
  // The time other processes held the engine threads' CPUs while those threads were runnable;
  // the culprit is the one that held them longest (pid, comm, its share of that time), with
  // tracer_overhead_ms when the tracer's own threads took ≥ 1 ms of it.
  static void find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
  // The tracer's own share as an evidence line (cpu_contention_tracer_evidence).
  static RequestChainWords chain_words(const Culprit& culprit);
};

// The chain's evidence line for the tracer's own share (diagnosis/request_causes.cpp keeps it
// out of the culprits): "tracer overhead: N ms …" when the culprit has tracer_overhead_ms,
// else "".
std::string cpu_contention_tracer_evidence(const Culprit& culprit);

}  // namespace causeway::requests
