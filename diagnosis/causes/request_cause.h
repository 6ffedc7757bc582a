// What a request-level cause module provides (docs/DIAGNOSIS.md "Adding a cause", request
// level): the causes keyed to requests (docs/INFERENCE.md "Causes keyed to requests") are a
// closed set, each a module in diagnosis/causes/request_<cause>.{h,cpp} that declares one
// descriptor struct with its id, its JSON name, the tier its claims take a gap's time in
// (docs/INFERENCE.md "Claims on one gap") and its recommendation. The registry
// (diagnosis/causes/request_registry.h) lists every descriptor once; the concept below makes the
// compiler refuse a module that lacks a piece.
#pragma once

#include <concepts>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

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
// it blames (each cause's culprit keys: docs/INTERFACES.md "Inference requests").
struct CauseClaim {
  RequestCause cause = RequestCause::cpu_contention;  // its name: RequestCauses::name (request_registry.h)
  double lost_ns = 0;
  nlohmann::json culprit;
};

template <typename M>
concept RequestCauseModule = requires(const nlohmann::json& culprit) {
  { M::id } -> std::convertible_to<RequestCause>;
  { M::name } -> std::convertible_to<std::string_view>;
  { M::tier } -> std::convertible_to<ClaimTier>;
  // The chain's recommendation, which may depend on what the culprit says.
  { M::recommendation(culprit) } -> std::convertible_to<const char*>;
};

}  // namespace causeway::requests
