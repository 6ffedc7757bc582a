// How every `--json` document leaves the CLI (docs/INTERFACES.md: one JSON document on stdout).
#pragma once

#include <nlohmann/json.hpp>

namespace causeway::cli {

// One line on stdout, invalid UTF-8 replaced, every `*_ns` instant with its exact ISO-8601 twin
// (docs/INTERFACES.md "Exact numbers").
void print_json(nlohmann::json doc);

}  // namespace causeway::cli
