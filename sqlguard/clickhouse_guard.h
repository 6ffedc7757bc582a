// The lexical guard for ClickHouse SQL (run_sql under `mcp --fleet`, docs/SQLGUARD.md
// "ClickHouse SQL"). The server is the real boundary there: the reader's profile is
// readonly=1 (no writes, no DDL, no settings, no table functions) with its own time and
// result limits. This guard only refuses, before a byte reaches the server, what the MCP
// server itself must control: one SELECT (or WITH … SELECT) statement, no FORMAT (the
// server picks the output format), no SETTINGS or SET (limits come from the profile), no
// INTO OUTFILE, and no text past a size cap.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway::sqlguard {

// The statement without trailing semicolons, comments or whitespace, ready to be wrapped as
// a subquery; or Error{"sql_rejected", message naming the token, its byte offset and the fix}.
Result<std::string> clickhouse_select(std::string_view sql);

}  // namespace causeway::sqlguard
