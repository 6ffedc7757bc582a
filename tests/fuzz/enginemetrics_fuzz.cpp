// libFuzzer target for what an inference engine's /metrics endpoint sends back
// (docs/INFERENCE.md "Engine metrics"): the HTTP/1.0 response reader and the Prometheus text
// parser. No input may crash them or trip a sanitizer, and every sample that comes out is
// well-formed: a metric name of the allowed characters within the cap, a finite value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collector/http_get.h"
#include "requests/prom_text.h"

using namespace causeway;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte picks: 0 the text as a body, else a whole HTTP response then its body.
  std::string_view text = in.empty() ? in : in.substr(1);
  std::string body;
  if (!in.empty() && in[0] != 0) {
    auto r = collector::http_response_body(text);
    if (!r) return 0;
    if (r->size() > text.size()) std::abort();
    body = std::move(*r);
    text = body;
  }
  requests::PromLimits lim;
  lim.max_samples = 64;
  const requests::PromParse p = requests::parse_prometheus(text, lim);
  if (p.samples.size() > lim.max_samples) std::abort();
  for (const auto& s : p.samples) {
    if (s.name.empty() || s.name.size() > lim.max_name_bytes || s.labels.size() > lim.max_labels_bytes) std::abort();
    if (!std::isfinite(s.value)) std::abort();
    for (char c : s.name)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':'))
        std::abort();
  }
  return 0;
}
