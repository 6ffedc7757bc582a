// Resources: the schema description (what describe_schema returns, as text) and the list of
// sessions in the served DB.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "mcp/tool_registry.h"

namespace causeway::mcp {

nlohmann::json resource_list();

// resources/read result ({"contents": [...]}); "unknown_resource" when the URI is not ours.
Result<nlohmann::json> read_resource(const std::string& uri, DbPool& pool, const ServerConfig& config);

}  // namespace causeway::mcp
