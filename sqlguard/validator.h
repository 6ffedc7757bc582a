// Text-level gate over the lexer's tokens: exactly one read-only statement, only
// allow-listed functions, no file/page/pragma tables. It needs no database, so it can
// refuse hostile SQL before SQLite parses a byte of it, and it says which token is wrong.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway::sqlguard {

// Longest SQL text accepted; analyst queries are a few KB, and the connection caps
// SQLITE_LIMIT_SQL_LENGTH at the same value.
inline constexpr size_t kMaxSqlBytes = 100 * 1024;

struct Rejection {
  size_t offset = 0;    // byte offset of the offending token
  std::string token;    // printable excerpt of it ("" at end of input)
  std::string message;  // full sentence, names the token and offset and what to do
};

// Accepts SELECT, WITH ... SELECT, VALUES, and EXPLAIN [QUERY PLAN] of those, as one
// statement (trailing semicolons allowed). Returns the first problem found, or nullopt.
std::optional<Rejection> find_rejection(std::string_view sql);

// find_rejection as a Result: Error{"sql_rejected", message}.
Result<void> validate_sql(std::string_view sql);

}  // namespace causeway::sqlguard
