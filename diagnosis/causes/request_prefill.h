// `prefill_interference` keyed to requests: other requests' long prefills held the engine's
// forward passes during the slow part; the culprit is those long requests (docs/INFERENCE.md
// "Causes keyed to requests").
#pragma once

#include <map>
#include <vector>

#include "diagnosis/causes/request_cause.h"
#include "diagnosis/forward_passes.h"

namespace causeway::requests {

struct PrefillInterferenceRequestCause {
  static constexpr RequestCause id = RequestCause::prefill_interference;
  static constexpr std::string_view name = "prefill_interference";
  static constexpr ClaimTier tier = ClaimTier::engine_work;
  static const char* recommendation(const Culprit& culprit);
  // How it was seen: from the engine's forward passes, or from the long prompts alone.
  static RequestChainWords chain_words(const Culprit& culprit);

  // The engine's forward passes over each server's serving time, read at the first need.
  struct EnginePasses {
    PassScan scan;
    int64_t median_ns = 0;
    int64_t longest_ns = 0;
  };
  struct State {
    std::map<uint32_t, EnginePasses> by_server;
  };
  // Culprit: the long requests (ids; each with its prompt tokens when known, else bytes, and
  // its tenant), the engine pid, the basis (forward_pass with pass_ms and median_pass_ms, or
  // prompt_bytes).
  static void find(State& st, RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
};

}  // namespace causeway::requests
