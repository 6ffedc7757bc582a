// `queueing`: the request was accepted but waited in the engine's queue while the engine was
// busy with others (capacity). Read from the engine's own waiting-requests gauge
// (docs/INFERENCE.md "Causes keyed to requests").
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <optional>
#include <vector>

#include "diagnosis/engine_series.h"

namespace causeway::requests {

// queueing: the request waited in the engine's queue before its first token.
struct QueueingRequestCause {
  static constexpr RequestCause id = RequestCause::queueing;
  static constexpr std::string_view name = "queueing";
  static constexpr ClaimTier tier = ClaimTier::engine_state;
  static const char* recommendation(const Culprit& culprit);
  // "; up to N requests waiting in the engine's queue"
  static RequestChainWords chain_words(const Culprit& culprit);
  // queueing_claim over the part before the request's first token.
  static void find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
};

// [from, to]: the part of a request's slow part before its first token (a request that has
// streamed a token is running, not queued). A claim when the engine reported requests
// waiting during it: the time covered by those reports; culprit {"pid", "waiting_max"}.
std::optional<CauseClaim> queueing_claim(const EngineSeries& s, uint32_t engine_pid, int64_t from, int64_t to);

}  // namespace causeway::requests
