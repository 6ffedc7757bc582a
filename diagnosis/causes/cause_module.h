// What a cause module provides (diagnosis/causes/<cause>.{h,cpp}, docs/DIAGNOSIS.md "Adding a
// cause"). Every module: an id and its JSON name. A per-call cause: a typed Evidence struct its
// detector fills, and the two renderers that turn one accumulated chain into words: explain()
// (summary, culprit, evidence lines) and fix() (the recommendation). A session cause: report(),
// which writes its chain documents. A module that keeps evidence across the session declares a
// `struct State` (its accumulator, owned by the registry, causes/registry.h) and the hooks that
// feed it: observe(State&, const Ev&, const ObserveContext&) for every traced call the
// correlator walks, observe_chunk(State&, const ChunkContext&, from, to) for evidence judged per
// chunk (NCCL groups across ranks); report/explain/fix then take the State too. A module missing
// a piece fails the concepts below, which the registry checks at compile time.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnosis/cause.h"
#include "diagnosis/culprit.h"

namespace causeway {

struct ChainView;       // one accumulated chain, read-only, with the words shared by every cause (chain_view.h)
struct SessionReport;   // the chain documents being written (chain_view.h)
struct Ev;              // one traced event (diagnosis/event_row.h)
struct ObserveContext;  // what the walk knows of one call (diagnosis/chunk_context.h)
struct ChunkContext;    // the chunk's timeline, host index and collective groups (diagnosis/chunk_context.h)

enum class Severity : uint8_t { low = 1, medium = 2, high = 3 };

// The JSON spelling of a severity (docs/INTERFACES.md `severity`).
constexpr std::string_view severity_name(Severity s) {
  return s == Severity::high ? "HIGH" : s == Severity::medium ? "MEDIUM" : "LOW";
}

struct Finding {
  std::string summary;
  std::optional<Culprit> culprit;  // none when the data names none
  std::vector<std::string> evidence;
  std::optional<uint16_t> op;              // the op the chain is reported under, when not its calls' op
  std::optional<Severity> max_severity;    // a cause that is never HIGH (a one-time cost, weak evidence)
  bool report_below_min_impact = false;    // kept even when it lost under min_impact of the window
  bool calls_line = true;                  // lead the evidence with "N of M <op> calls slow"
  double min_impact = 0.001;               // dropped (unless kept above) when it lost less
};

// A module's accumulator (its State) when it declares one, else an empty placeholder.
struct NoState {};
template <typename M>
struct state_of {
  using type = NoState;
};
template <typename M>
  requires requires { typename M::State; }
struct state_of<M> {
  using type = typename M::State;
};
template <typename M>
using state_of_t = typename state_of<M>::type;
template <typename M>
concept HasState = requires { typename M::State; };

// The optional hooks the correlator's walk calls through the registry.
template <typename M>
concept ObservesCalls = requires(state_of_t<M>& st, const Ev& e, const ObserveContext& cx) { M::observe(st, e, cx); };
template <typename M>
concept ObservesChunks =
    requires(state_of_t<M>& st, const ChunkContext& cx, int64_t t) { M::observe_chunk(st, cx, t, t); };

template <typename M>
concept CauseModule = requires {
  requires std::same_as<std::remove_cv_t<decltype(M::id)>, Cause>;
  requires std::convertible_to<decltype(M::name), std::string_view>;
  requires std::default_initializable<typename M::Evidence>;
} && (requires(const ChainView& v, const typename M::Evidence& e) {
  { M::explain(v, e) } -> std::same_as<Finding>;
  { M::fix(v, e) } -> std::same_as<std::string>;
} || requires(const ChainView& v, const typename M::Evidence& e, const state_of_t<M>& st) {
  requires HasState<M>;
  { M::explain(v, e, st) } -> std::same_as<Finding>;
  { M::fix(v, e, st) } -> std::same_as<std::string>;
});

// Causes found over the whole session from their own accumulators (not per slow call): they
// emit() typed chains (chain_view.h) themselves.
template <typename M>
concept SessionCauseModule = requires {
  requires std::same_as<std::remove_cv_t<decltype(M::id)>, Cause>;
  requires std::convertible_to<decltype(M::name), std::string_view>;
} && (requires(SessionReport& r) {
  { M::report(r) } -> std::same_as<void>;
} || requires(SessionReport& r, state_of_t<M>& st) {
  requires HasState<M>;
  { M::report(r, st) } -> std::same_as<void>;
});

}  // namespace causeway
