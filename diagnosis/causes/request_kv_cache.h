// `kv_cache_pressure`: the engine's KV cache was full and it preempted (vLLM) or retracted
// (SGLang) requests during the request's slow part: a preempted request stops streaming
// until it is admitted again and its cache recomputed (docs/INFERENCE.md "Causes keyed to
// requests"). Read from the engine's own KV-usage gauge and preemption counter.
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <optional>
#include <vector>

#include "diagnosis/engine_series.h"

namespace causeway::requests {

// kv_cache_pressure: the engine preempted running requests for KV cache room.
struct KvCacheRequestCause {
  static constexpr RequestCause id = RequestCause::kv_cache_pressure;
  static constexpr std::string_view name = "kv_cache_pressure";
  static constexpr ClaimTier tier = ClaimTier::engine_state;
  static const char* recommendation(const Culprit& culprit);
  // "; KV cache N% full, M preemptions"
  static RequestChainWords chain_words(const Culprit& culprit);
  // kv_cache_claim over the slow part.
  static void find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
};

// A cache this full is under pressure (vLLM preempts when a step's blocks do not fit).
inline constexpr double kKvFull = 0.9;

// A claim only when the preemption counter rose in a scrape interval touching [from, to]:
// a full cache alone is an engine using its memory well. Lost: all of [from, to] when it
// began within a scrape interval of a preemption (the preempted request's stall), else the
// time covered by intervals in which the counter rose or the cache was kKvFull full.
// Culprit {"pid", "kv_cache_usage" (the highest seen), "preemptions" (the rise)}.
std::optional<CauseClaim> kv_cache_claim(const EngineSeries& s, uint32_t engine_pid, int64_t from, int64_t to);

}  // namespace causeway::requests
