// Replacements for built-in SQL functions whose worst case is quadratic inside a single VM
// step, where the progress-handler deadline cannot interrupt them.
//
// SQLite 3.40's trim(X, Y) compares every leading/trailing character of X against every
// character of Y: with X and Y of n bytes that is n² compare calls — 2.4 s at n = 32 KiB,
// 9.6 s at 64 KiB (measured). These versions do one hash lookup per character instead.
// printf()/format() with "%.*c" and a precision of 2e9 loop 2e9 times appending to a
// buffer that already failed (measured 12 s); these versions refuse a width or precision
// above the connection's SQLITE_LIMIT_LENGTH, then hand the call to the built-in printf on a
// private in-memory connection.
// instr() and replace() stay built-in: their n²/4 memcmp worst case is 0.3 s at the
// 256 KiB SQLITE_LIMIT_LENGTH the connection sets.
#pragma once

#include <sqlite3.h>

#include "common/result.h"

namespace causeway::sqlguard {

// Registers trim, ltrim, rtrim (one and two arguments), printf and format on db, shadowing
// the built-ins. Call after the connection's limits are set (printf reads LENGTH).
Result<void> register_safe_functions(sqlite3* db);

}  // namespace causeway::sqlguard
