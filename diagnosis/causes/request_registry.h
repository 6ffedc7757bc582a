// The registry of request-level causes: every module listed once (docs/DIAGNOSIS.md "Adding a
// cause", request level). Adding a cause = its module (diagnosis/causes/request_<cause>.{h,cpp}
// with a descriptor that satisfies RequestCauseModule), its RequestCause enumerator and one line
// in RequestCauses below; the compiler checks the module's pieces, that no two modules share an
// id, that every RequestCause has a module and that a found_with names a module that finds.
// The finder (diagnosis/request_causes.cpp) asks every module through find_all(), in the
// order of the list; it and the chains are the only includers (modules never include this).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

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
  using States = std::tuple<state_of_t<M>...>;
  static constexpr bool complete() {
    std::array<int, kRequestCauseCount> seen{};
    ((++seen[static_cast<size_t>(M::id)]), ...);
    for (int n : seen)
      if (n != 1) return false;
    return true;
  }
  static_assert(complete(), "every RequestCause needs exactly one module in RequestCauses");

  static constexpr bool finds(RequestCause c) { return ((M::id == c && FindsRequestClaims<M>) || ...); }
  static constexpr bool found_with_finds() {
    auto one = []<typename X>() {
      if constexpr (FoundWithAnother<X>) return X::found_with != X::id && finds(X::found_with);
      else return true;
    };
    return (one.template operator()<M>() && ...);
  }
  static_assert(found_with_finds(), "a module's found_with must name another module that has find()");

  // Every module's claims on one slow part, in the list's order.
  static void find_all(States& states, RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
    auto one = [&]<typename X>() {
      if constexpr (FindsRequestClaims<X>) {
        if constexpr (HasState<X>) X::find(std::get<index_of<X>()>(states), ev, part, out);
        else X::find(ev, part, out);
      }
    };
    (one.template operator()<M>(), ...);
  }
  template <typename X>
  static constexpr size_t index_of() {
    size_t i = 0, found = size;
    ((std::is_same_v<X, M> ? (found = i, ++i) : ++i), ...);
    return found;
  }

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
  static const char* recommendation(RequestCause c, const Culprit& culprit) {
    const char* r = "";
    ((M::id == c ? (r = M::recommendation(culprit), true) : false) || ...);
    return r;
  }
  // What the cause's module adds to its chain; nothing when it adds nothing.
  static RequestChainWords chain_words(RequestCause c, const Culprit& culprit) {
    RequestChainWords w;
    auto one = [&]<typename X>() {
      if constexpr (AddsChainWords<X>)
        if (X::id == c) w = X::chain_words(culprit);
    };
    (one.template operator()<M>(), ...);
    return w;
  }
};

// The order is the order the finder asks them (a tie between two claims keeps it).
using RequestCauses = RequestModuleList<CpuContentionRequestCause, IoContentionRequestCause, MemoryPressureRequestCause,
                                        NcclStragglerRequestCause, PrefillInterferenceRequestCause, QueueingRequestCause,
                                        KvCacheRequestCause, NetworkRequestCause, ApiServerBusyRequestCause>;

}  // namespace causeway::requests
