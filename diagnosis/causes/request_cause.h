// What a request-level cause module provides (docs/DIAGNOSIS.md "Adding a cause", request
// level): the causes keyed to requests (docs/INFERENCE.md "Causes keyed to requests") are a
// closed set, each a module in diagnosis/causes/request_<cause>.{h,cpp} that declares one
// descriptor struct with its id, its JSON name, the tier its claims take a gap's time in
// (docs/INFERENCE.md "Claims on one gap"), its recommendation, and its detector: find(), which
// claims time of one slow part from the session's evidence (diagnosis/request_evidence.h), or,
// for a cause found by another module's detector, found_with (io_contention's D-state reading
// also claims memory_pressure). A module that keeps something across slow parts declares a
// `struct State` (owned by the finder through the registry) and takes it first in find(). A
// module may add words to its chain: chain_words(). The registry
// (diagnosis/causes/request_registry.h) lists every descriptor once; the concept below makes the
// compiler refuse a module that lacks a piece.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/culprit.h"

namespace causeway::requests {

enum class RequestCause : uint8_t {
  network,
  prefill_interference,
  nccl_straggler,
  queueing,
  kv_cache_pressure,
  cpu_contention,
  io_contention,
  memory_pressure,
  api_server_busy,
};
inline constexpr int kRequestCauseCount = static_cast<int>(RequestCause::api_server_busy) + 1;

// Which claim takes a gap's time first when several claim it (lower first): the more specific
// the evidence, the earlier. Within a tier the claim with the most time goes first.
enum class ClaimTier : uint8_t {
  own_connection = 0,  // measured on the request's own socket
  engine_work = 1,     // the engine did other work instead (a named request's pass, a late rank)
  engine_state = 2,    // the engine's own metrics (its queue, its KV cache)
  host_state = 3,      // the engine threads' scheduler states (runnable, D)
};

// What a module's finder returns: the time it takes from one slow part of a request, and who
// it blames: the one Culprit type of both levels (diagnosis/culprit.h; each cause's keys:
// docs/INTERFACES.md "Inference requests"), written only by diagnosis/chain_json.h culprit_json.
struct CauseClaim {
  RequestCause cause = RequestCause::cpu_contention;  // its name: RequestCauses::name (request_registry.h)
  double lost_ns = 0;
  Culprit culprit;
  // Set when the claim takes its time in another tier than its cause's: a rank late for want
  // of a CPU is cpu_contention on the gap's critical path, where the late rank's own claim
  // would have been (engine_work; docs/INFERENCE.md "Claims on one gap").
  std::optional<ClaimTier> tier;
};

class RequestEvidence;  // diagnosis/request_evidence.h
struct SlowPart;        // diagnosis/request_evidence.h

// What a cause adds to its request chain (diagnosis/request_chains.cpp) from its culprit: a
// clause ending the summary ("; up to 3 requests waiting …") and evidence lines.
struct RequestChainWords {
  std::string said;
  std::vector<std::string> evidence;
};

// The detector: claims (any number, of its own id or of a module found_with it) on one slow
// part, appended to `out`; the finder drops those under the noise floor and arbitrates.
template <typename M>
concept FindsRequestClaims =
    requires(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) { M::find(ev, part, out); } ||
    requires(state_of_t<M>& st, RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
      requires HasState<M>;
      M::find(st, ev, part, out);
    };
// A cause whose claims another module's detector makes (the registry checks that module has one).
template <typename M>
concept FoundWithAnother = requires {
  { M::found_with } -> std::convertible_to<RequestCause>;
};
template <typename M>
concept AddsChainWords = requires(const Culprit& culprit) {
  { M::chain_words(culprit) } -> std::same_as<RequestChainWords>;
};

template <typename M>
concept RequestCauseModule = requires(const Culprit& culprit) {
  { M::id } -> std::convertible_to<RequestCause>;
  { M::name } -> std::convertible_to<std::string_view>;
  { M::tier } -> std::convertible_to<ClaimTier>;
  // The chain's recommendation, which may depend on what the culprit says.
  { M::recommendation(culprit) } -> std::convertible_to<const char*>;
} && (FindsRequestClaims<M> || FoundWithAnother<M>);

}  // namespace causeway::requests
