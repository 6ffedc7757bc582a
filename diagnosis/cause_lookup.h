// A cause named in a chain document (JSON), back to its enumerator: readers of stored chains
// (the HTML report, exporters/) go from the name to the closed set through the registries
// (diagnosis/causes/registry.h, diagnosis/causes/request_registry.h) without including them.
#pragma once

#include <optional>
#include <string_view>

#include "diagnosis/cause.h"
#include "diagnosis/causes/request_cause.h"

namespace causeway {

// nullopt: the name is no call-level cause.
std::optional<Cause> call_cause_named(std::string_view name);
// nullopt: the name is no request-level cause.
std::optional<requests::RequestCause> request_cause_named(std::string_view name);

}  // namespace causeway
