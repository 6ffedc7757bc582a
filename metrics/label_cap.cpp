#include "metrics/label_cap.h"

#include "common/sanitize.h"

namespace causeway {

std::string LabelCap::admit(std::string_view raw) {
  std::string v = sanitize_untrusted(raw, kMaxLabelBytes);
  if (admitted_.count(v)) return v;
  // "other" is ours: a traced value spelled "other" is folded with the rest, never admitted
  // as if it were a real path (it would hide how much was folded).
  if (admitted_.size() >= max_ || v == kOtherLabelValue) {
    ++folded_;
    return kOtherLabelValue;
  }
  admitted_.insert(v);
  return v;
}

}  // namespace causeway
