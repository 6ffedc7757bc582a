// The registry of request-level causes: every module listed once (docs/DIAGNOSIS.md "Adding a
// cause", request level). Adding a cause = its module (diagnosis/causes/request_<cause>.{h,cpp}
// with a descriptor that satisfies RequestCauseModule), its RequestCause enumerator and one line
// in RequestCauses below; the compiler checks the module's pieces, that no two modules share an
// id, and that every RequestCause has a module.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "diagnosis/causes/request_api_server_busy.h"
#include "diagnosis/causes/request_cause.h"
#include "diagnosis/causes/request_cpu_contention.h"
#include "diagnosis/causes/request_d_state.h"
#include "diagnosis/causes/request_kv_cache.h"
#include "diagnosis/causes/request_nccl.h"
#include "diagnosis/causes/request_network.h"
#include "diagnosis/causes/request_prefill.h"
#include "diagnosis/causes/request_queueing.h"

namespace causeway::requests {

template <RequestCauseModule... M>
struct RequestModuleList {
  static constexpr size_t size = sizeof...(M);
  static constexpr bool complete() {
    std::array<int, kRequestCauseCount> seen{};
    ((++seen[static_cast<size_t>(M::id)]), ...);
    for (int n : seen)
      if (n != 1) return false;
    return true;
  }
  static_assert(complete(), "every RequestCause needs exactly one module in RequestCauses");

  static constexpr std::optional<RequestCause> find(std::string_view name) {
    std::optional<RequestCause> id;
    ((M::name == name ? (id = M::id, true) : false) || ...);
    return id;
  }
  static constexpr std::string_view name(RequestCause c) {
    std::string_view n;
    ((M::id == c ? (n = M::name, true) : false) || ...);
    return n;
  }
  static constexpr ClaimTier tier(RequestCause c) {
    ClaimTier t = ClaimTier::host_state;
    ((M::id == c ? (t = M::tier, true) : false) || ...);
    return t;
  }
  static const char* recommendation(RequestCause c, const nlohmann::json& culprit) {
    const char* r = "";
    ((M::id == c ? (r = M::recommendation(culprit), true) : false) || ...);
    return r;
  }
};

using RequestCauses = RequestModuleList<NetworkRequestCause, PrefillInterferenceRequestCause, NcclStragglerRequestCause,
                                        QueueingRequestCause, KvCacheRequestCause, CpuContentionRequestCause,
                                        IoContentionRequestCause, MemoryPressureRequestCause,
                                        ApiServerBusyRequestCause>;

}  // namespace causeway::requests
