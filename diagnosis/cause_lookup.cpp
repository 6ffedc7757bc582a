#include "diagnosis/cause_lookup.h"

#include "diagnosis/causes/registry.h"
#include "diagnosis/causes/request_registry.h"

namespace causeway {

std::optional<Cause> call_cause_named(std::string_view name) {
  for (int i = 0; i < kCauseCount; ++i)
    if (cause_name(static_cast<Cause>(i)) == name) return static_cast<Cause>(i);
  return std::nullopt;
}

std::optional<requests::RequestCause> request_cause_named(std::string_view name) {
  return requests::RequestCauses::find(name);
}

}  // namespace causeway
