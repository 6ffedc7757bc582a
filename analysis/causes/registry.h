// The registry of causes: every module, listed once. Adding a cause = its module file(s) under
// analysis/causes/ + one line in CallCauses (or SessionCauses) below + its Cause enumerator;
// the compiler then checks the module has typed evidence and both renderers, that no two
// modules share an id, and that every Cause has a module.
#pragma once

#include <any>
#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

#include "analysis/causes/cause_module.h"
#include "analysis/causes/cold_start.h"
#include "analysis/causes/cpu_contention.h"
#include "analysis/causes/dataloader_starvation.h"
#include "analysis/causes/gpu_wait.h"
#include "analysis/causes/io_contention.h"
#include "analysis/causes/lock_contention.h"
#include "analysis/causes/memory_pressure.h"
#include "analysis/causes/network.h"
#include "analysis/causes/session_causes.h"
#include "analysis/causes/unknown.h"

namespace causeway {

// Per-call causes: each slow call (or host stall between calls) is claimed by one of them and
// accumulated into a chain whose evidence is that module's Evidence.
template <CauseModule... M>
struct CauseRegistry {
  static constexpr size_t size = sizeof...(M);

  static constexpr bool unique_ids() {
    constexpr std::array<Cause, size> ids{M::id...};
    for (size_t i = 0; i < size; ++i)
      for (size_t j = i + 1; j < size; ++j)
        if (ids[i] == ids[j]) return false;
    return true;
  }
  static_assert(unique_ids(), "two cause modules share a Cause id");

  static constexpr bool has(Cause c) { return ((M::id == c) || ...); }
  static constexpr std::string_view name(Cause c) {
    std::string_view n;
    ((M::id == c ? (n = M::name, true) : false) || ...);
    return n;
  }

  // Calls f<M>(evidence) for the module M of cause c, with the typed evidence a chain of
  // that cause holds (chain_for<M> put an M::Evidence in it; anything else reads as empty).
  template <typename F>
  static decltype(auto) visit(Cause c, const std::any& evidence, F&& f) {
    using R = decltype(f.template operator()<std::tuple_element_t<0, std::tuple<M...>>>(
        std::declval<const typename std::tuple_element_t<0, std::tuple<M...>>::Evidence&>()));
    R r{};
    ((M::id == c ? (r = call_with<M>(evidence, f), true) : false) || ...);
    return r;
  }

 private:
  template <typename Mod, typename F>
  static decltype(auto) call_with(const std::any& evidence, F& f) {
    if (const auto* e = std::any_cast<typename Mod::Evidence>(&evidence)) return f.template operator()<Mod>(*e);
    return f.template operator()<Mod>(typename Mod::Evidence{});
  }
};

using CallCauses = CauseRegistry<CpuContention, IoContention, MemoryPressure, Network, GpuWait, LockContention, ColdStart,
                                  DataLoaderStarvation, Unknown>;

template <SessionCauseModule... M>
struct SessionCauseList {
  static void report_all(SessionReport& r) { (M::report(r), ...); }
  static constexpr bool has(Cause c) { return ((M::id == c) || ...); }
  static constexpr std::string_view name(Cause c) {
    std::string_view n;
    ((M::id == c ? (n = M::name, true) : false) || ...);
    return n;
  }
};

using SessionCauses = SessionCauseList<NcclStraggler, TransferBound, Allocator, HostBound, LaunchBound, GraphRecapture>;

// The JSON spelling of a cause (docs/INTERFACES.md `cause`).
constexpr std::string_view cause_name(Cause c) {
  return CallCauses::has(c) ? CallCauses::name(c) : SessionCauses::name(c);
}

constexpr bool every_cause_has_one_module() {
  for (int i = 0; i < kCauseCount; ++i) {
    auto c = static_cast<Cause>(i);
    if (CallCauses::has(c) == SessionCauses::has(c)) return false;
  }
  return true;
}
static_assert(every_cause_has_one_module(), "each Cause needs exactly one module in CallCauses or SessionCauses");

}  // namespace causeway
