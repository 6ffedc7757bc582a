// The subset of JSON Schema (2020-12) our tool schemas use: type (incl. type lists), properties,
// required, additionalProperties (bool or schema), items, enum, minimum/maximum,
// minLength/maxLength, minItems/maxItems. Used to validate tool arguments before a tool runs
// and, in tests, every structuredContent against its output schema. Unknown keywords are
// ignored (never a false rejection).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace causeway::mcp {

// "" when value conforms; else the first violation, e.g. "/limit: must be <= 1000".
std::string validate_json(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace causeway::mcp
