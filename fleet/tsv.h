// ClickHouse's TabSeparated format: the escaping both ways. Binary-safe: any byte string
// survives escape → ClickHouse → unescape (tabs, newlines, backslashes and NUL escaped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace causeway::fleet {

void tsv_escape_append(std::string& out, std::string_view s);
std::string tsv_unescape(std::string_view s);

// A string literal for a ClickHouse statement: 'text' with \ and ' escaped.
std::string sql_quote(std::string_view s);

}  // namespace causeway::fleet
