#include "diagnosis/causes/request_prefill.h"

namespace causeway::requests {

const char* PrefillInterferenceRequestCause::recommendation([[maybe_unused]] const nlohmann::json& culprit) {
  return "Bound the prefill a decode step waits for: enable chunked prefill (vLLM --enable-chunked-prefill with a "
         "smaller --max-num-batched-tokens), or route long prompts to their own replica.";
}

}  // namespace causeway::requests
