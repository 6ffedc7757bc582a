// Label values taken from traced bytes (paths, tenants, models, comms) are untrusted and
// unbounded: a client that sends 10,000 distinct paths must not make 10,000 series. A LabelCap
// admits the first `max_values` distinct values of one label, sanitized, and folds every later
// new value into "other", counting the requests it folded (docs/METRICS.md "Cardinality").
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace causeway {

inline constexpr const char* kOtherLabelValue = "other";

class LabelCap {
 public:
  explicit LabelCap(size_t max_values) : max_(max_values) {}

  // The value to publish for `raw`: sanitized (valid UTF-8, no control or invisible
  // characters, at most kMaxLabelBytes), or "other" once the cap is reached.
  std::string admit(std::string_view raw);

  size_t distinct() const { return admitted_.size(); }
  uint64_t folded() const { return folded_; }  // observations published as "other"

  // A label value stays short in the exposition: a 4 KiB path is not a useful series name.
  static constexpr size_t kMaxLabelBytes = 128;

 private:
  size_t max_;
  std::set<std::string, std::less<>> admitted_;
  uint64_t folded_ = 0;
};

}  // namespace causeway
