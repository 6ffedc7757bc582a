// `cpu_contention` keyed to requests: the engine's threads were runnable but off CPU during the
// slow part; the culprit is who held their CPUs meanwhile, by time, never the tracer
// (diagnosis/request_causes.cpp CauseFinder::cpu_contention, docs/INFERENCE.md "Causes keyed to
// requests").
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <string>

namespace causeway::requests {

struct CpuContentionRequestCause {
  static constexpr RequestCause id = RequestCause::cpu_contention;
  static constexpr std::string_view name = "cpu_contention";
  static constexpr ClaimTier tier = ClaimTier::host_state;
  static const char* recommendation(const nlohmann::json& culprit);
};

// The chain's evidence line for the tracer's own share (diagnosis/request_causes.cpp keeps it
// out of the culprits): "tracer overhead: N ms …" when the culprit carries tracer_overhead_ms,
// else "".
std::string cpu_contention_tracer_evidence(const nlohmann::json& culprit);

}  // namespace causeway::requests
