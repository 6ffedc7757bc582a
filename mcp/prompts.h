// Prompts: the `investigate` workflow that walks a model from readiness to a cited fix.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace causeway::mcp {

// prompts/list entries.
nlohmann::json prompt_list();

// prompts/get result ({"description", "messages"}); "unknown_prompt" / "invalid_argument" errors.
Result<nlohmann::json> get_prompt(const std::string& name, const nlohmann::json& arguments);

}  // namespace causeway::mcp
