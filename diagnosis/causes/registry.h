// The registry of causes: every module, listed once, and the owner of their accumulators.
// Adding a cause = its module (diagnosis/causes/<cause>.{h,cpp}), its Cause enumerator
// (diagnosis/cause.h) and one line in CallCauses or SessionCauses below. The correlator's walk
// feeds every module's observe()/observe_chunk() hook through CauseStates, and the chain
// builder renders (call causes) or reports (session causes) each with its own State; the
// compiler checks the module's pieces (cause_module.h), that no two modules share an id, and
// that every Cause has a module. Only the correlator and the chain builder include this file:
// modules never do (docs/DIAGNOSIS.md "Layers").
#pragma once

#include <any>
#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "diagnosis/causes/allocator.h"
#include "diagnosis/causes/cause_module.h"
#include "diagnosis/causes/cold_start.h"
#include "diagnosis/causes/cpu_contention.h"
#include "diagnosis/causes/dataloader_starvation.h"
#include "diagnosis/causes/gpu_wait.h"
#include "diagnosis/causes/graph_recapture.h"
#include "diagnosis/causes/host_bound.h"
#include "diagnosis/causes/io_contention.h"
#include "diagnosis/causes/launch_bound.h"
#include "diagnosis/causes/lock_contention.h"
#include "diagnosis/causes/memory_pressure.h"
#include "diagnosis/causes/nccl_straggler.h"
#include "diagnosis/causes/network.h"
#include "diagnosis/causes/transfer_bound.h"
#include "diagnosis/causes/unknown.h"

namespace causeway {

// What both lists share: names, ids, each module's State in one tuple, and the hooks.
template <typename... M>
struct ModuleList {
  static constexpr size_t size = sizeof...(M);
  using States = std::tuple<state_of_t<M>...>;

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
  template <typename X>
  static constexpr bool contains() {
    return (std::is_same_v<X, M> || ...);
  }
  template <typename X>
  static constexpr size_t index_of() {
    size_t i = 0, found = size;
    ((std::is_same_v<X, M> ? (found = i, ++i) : ++i), ...);
    return found;
  }
  template <typename X>
  static auto& state(States& s) {
    return std::get<index_of<X>()>(s);
  }
  template <typename X>
  static const auto& state(const States& s) {
    return std::get<index_of<X>()>(s);
  }

  // One traced call of the walk, to every module that observes calls.
  static void observe_all(States& s, const Ev& e, const ObserveContext& cx) {
    auto one = [&]<typename X>() {
      if constexpr (ObservesCalls<X>) X::observe(state<X>(s), e, cx);
    };
    (one.template operator()<M>(), ...);
  }
  // One chunk of the walk, to every module that observes chunks.
  static void observe_chunk_all(States& s, const ChunkContext& cx, int64_t from, int64_t to) {
    auto one = [&]<typename X>() {
      if constexpr (ObservesChunks<X>) X::observe_chunk(state<X>(s), cx, from, to);
    };
    (one.template operator()<M>(), ...);
  }
};

// Per-call causes: each slow call (or host stall between calls) is claimed by one of them and
// accumulated into a chain whose evidence is that module's Evidence.
template <CauseModule... M>
struct CauseRegistry : ModuleList<M...> {
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

// Session causes: found over the whole session from their own State, each writing its chains.
template <SessionCauseModule... M>
struct SessionCauseList : ModuleList<M...> {
  using typename ModuleList<M...>::States;
  static void report_all(SessionReport& r, States& s) {
    auto one = [&]<typename X>() {
      if constexpr (HasState<X>) X::report(r, ModuleList<M...>::template state<X>(s));
      else X::report(r);
    };
    (one.template operator()<M>(), ...);
  }
};

using SessionCauses = SessionCauseList<NcclStraggler, TransferBound, Allocator, HostBound, LaunchBound, GraphRecapture>;

// The accumulators of every module for one diagnosis, owned by its Correlator and fed by its walk.
struct CauseStates {
  CallCauses::States call;
  SessionCauses::States session;

  void observe(const Ev& e, const ObserveContext& cx) {
    CallCauses::observe_all(call, e, cx);
    SessionCauses::observe_all(session, e, cx);
  }
  void observe_chunk(const ChunkContext& cx, int64_t from, int64_t to) {
    CallCauses::observe_chunk_all(call, cx, from, to);
    SessionCauses::observe_chunk_all(session, cx, from, to);
  }
  // Module M's State, for a detector that writes its claim into it (GpuWait::detect).
  template <typename M>
  auto& of() {
    if constexpr (CallCauses::contains<M>()) return CallCauses::state<M>(call);
    else return SessionCauses::state<M>(session);
  }
};

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
