#include "diagnosis/causes/request_cpu_contention.h"

namespace causeway::requests {

const char* CpuContentionRequestCause::recommendation([[maybe_unused]] const nlohmann::json& culprit) {
  return "Keep other work off the engine's CPUs: pin the engine core and its workers (taskset / cpuset) or move "
         "the culprit to other cores or a lower priority.";
}

}  // namespace causeway::requests
