// Prometheus text exposition (format 0.0.4) as an inference engine's /metrics serves it:
// untrusted text from another process, parsed with hard bounds (docs/INFERENCE.md "Engine
// metrics"). Pure code: text in, samples out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace causeway::requests {

struct PromSample {
  std::string name;    // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string labels;  // the label set as exposed, canonical: k="v",k2="v2" ('' none)
  double value = 0;    // finite only: NaN and ±Inf samples are skipped
};

struct PromLimits {
  size_t max_samples = 4096;     // beyond: counted in `dropped`, not parsed
  size_t max_line_bytes = 4096;  // a longer line is skipped whole
  size_t max_name_bytes = 200;
  size_t max_labels_bytes = 1024;
};

struct PromParse {
  std::vector<PromSample> samples;
  uint64_t bad_lines = 0;  // not a sample, a comment or blank: skipped
  uint64_t dropped = 0;    // samples past max_samples, or not finite
};

PromParse parse_prometheus(std::string_view text, const PromLimits& limits = {});

}  // namespace causeway::requests
