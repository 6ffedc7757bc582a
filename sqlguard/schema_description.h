// What an assistant needs to write a correct query the first time: every table and view of
// the live DB with its columns, types, units and documentation (from the schema_docs
// table), the conventions (time units, untrusted text), the functions and limits sqlguard
// allows, and example queries (each one is run by the tests).
#pragma once

#include <sqlite3.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace causeway::sqlguard {

// {"objects": [{"name", "type": "view"|"table", "description",
//               "columns": [{"name", "type", "unit", "description"}]}],
//  "conventions": ["..."], "functions": ["abs", ...], "limits": {...},
//  "examples": [{"question", "sql"}]}
// Views come first: they carry readable names and microsecond units.
Result<nlohmann::json> describe_schema(sqlite3* db);

// Compact text rendering (one line per object) for MCP text content and small models.
std::string describe_schema_text(const nlohmann::json& description);

}  // namespace causeway::sqlguard
