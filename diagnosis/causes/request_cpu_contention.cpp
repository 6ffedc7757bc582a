#include "diagnosis/causes/request_cpu_contention.h"

#include <cstdio>

namespace causeway::requests {

const char* CpuContentionRequestCause::recommendation([[maybe_unused]] const nlohmann::json& culprit) {
  return "Keep other work off the engine's CPUs: pin the engine core and its workers (taskset / cpuset) or move "
         "the culprit to other cores or a lower priority.";
}

std::string cpu_contention_tracer_evidence(const nlohmann::json& culprit) {
  if (!culprit.contains("tracer_overhead_ms")) return "";
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", culprit["tracer_overhead_ms"].get<double>());
  return std::string("tracer overhead: ") + ms +
         " ms (causeway's own threads held the engine's CPUs for that long while its threads were runnable; "
         "counted apart, never the culprit)";
}

}  // namespace causeway::requests
