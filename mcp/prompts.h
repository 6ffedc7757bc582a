// Prompts: the `investigate` workflow that walks a model from readiness to a cited fix.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"

namespace causeway::mcp {

// prompts/list entries.
nlohmann::json prompt_list();

// prompts/get result ({"description", "messages"}); "unknown_prompt" / "invalid_argument" errors.
// requests_served: HTTP requests in the served DB's latest session (nullopt: not known, e.g.
// the DB cannot be read yet): when there are any the workflow starts from them.
Result<nlohmann::json> get_prompt(const std::string& name, const nlohmann::json& arguments,
                                  std::optional<uint64_t> requests_served = std::nullopt);

}  // namespace causeway::mcp
