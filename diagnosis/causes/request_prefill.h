// `prefill_interference` keyed to requests: other requests' long prefills held the engine's
// forward passes during the slow part; the culprit is those long requests
// (diagnosis/request_causes.cpp CauseFinder::prefill, docs/INFERENCE.md "Causes keyed to
// requests").
#pragma once

#include "diagnosis/causes/request_cause.h"

namespace causeway::requests {

struct PrefillInterferenceRequestCause {
  static constexpr RequestCause id = RequestCause::prefill_interference;
  static constexpr std::string_view name = "prefill_interference";
  static constexpr ClaimTier tier = ClaimTier::engine_work;
  static const char* recommendation(const nlohmann::json& culprit);
};

}  // namespace causeway::requests
