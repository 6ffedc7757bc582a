// ClickHouse's TabSeparated format: the escaping both ways. Binary-safe: any byte string
// survives escape → ClickHouse → unescape (tabs, newlines, backslashes and NUL escaped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace causeway::fleet {

void tsv_escape_append(std::string& out, std::string_view s);
std::string tsv_unescape(std::string_view s);

// Splits a TabSeparated response into rows of unescaped fields ("\N" stays "\N").
std::vector<std::vector<std::string>> tsv_rows(std::string_view body);

// A string literal for a ClickHouse statement: 'text' with \ and ' escaped.
std::string sql_quote(std::string_view s);

}  // namespace causeway::fleet
