#include "sqlguard/policy.h"

#include <algorithm>
#include <array>
#include <string>

#include "sqlguard/lexer.h"

namespace causeway::sqlguard {
namespace {

// Sorted, lower case: binary search keeps each lookup ~7 comparisons with no allocation
// beyond the lower-casing.
constexpr std::array kAllowedFunctions = {
    "->", "->>", "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "avg", "ceil", "ceiling", "char",
    "coalesce", "cos", "cosh", "count", "cume_dist", "current_date", "current_time", "current_timestamp", "date",
    "datetime", "degrees", "dense_rank", "exp", "first_value", "floor", "format", "glob", "group_concat", "hex",
    "ifnull", "iif", "instr", "json", "json_array", "json_array_length", "json_extract", "json_group_array",
    "json_group_object", "json_insert", "json_object", "json_patch", "json_quote", "json_remove", "json_replace",
    "json_set", "json_type", "json_valid", "julianday", "lag", "last_value", "lead", "length", "like", "likelihood",
    "likely", "ln", "log", "log10", "log2", "lower", "ltrim", "max", "min", "mod", "nth_value", "ntile", "nullif",
    "percent_rank", "pi", "pow", "power", "printf", "quote", "radians", "random", "rank", "replace", "round",
    "row_number", "rtrim", "sign", "sin", "sinh", "sqlite_source_id", "sqlite_version", "sqrt", "strftime", "substr",
    "substring", "sum", "tan", "tanh", "time", "total", "trim", "trunc", "typeof", "unicode", "unixepoch",
    "unlikely", "upper"};

constexpr std::array kKeywords = {
    "abort", "action", "add", "after", "all", "alter", "always", "analyze", "and", "as", "asc", "attach",
    "autoincrement", "before", "begin", "between", "by", "cascade", "case", "cast", "check", "collate", "column",
    "commit", "conflict", "constraint", "create", "cross", "current", "current_date", "current_time",
    "current_timestamp", "database", "default", "deferrable", "deferred", "delete", "desc", "detach", "distinct", "do",
    "drop", "each", "else", "end", "escape", "except", "exclude", "exclusive", "exists", "explain", "fail", "filter",
    "first", "following", "for", "foreign", "from", "full", "generated", "glob", "group", "groups", "having", "if",
    "ignore", "immediate", "in", "index", "indexed", "initially", "inner", "insert", "instead", "intersect", "into",
    "is", "isnull", "join", "key", "last", "left", "like", "limit", "match", "materialized", "natural", "no", "not",
    "nothing", "notnull", "null", "nulls", "of", "offset", "on", "or", "order", "others", "outer", "over",
    "partition", "plan", "pragma", "preceding", "primary", "query", "raise", "range", "recursive", "references",
    "regexp", "reindex", "release", "rename", "replace", "restrict", "returning", "right", "rollback", "row", "rows",
    "savepoint", "select", "set", "table", "temp", "temporary", "then", "ties", "to", "transaction", "trigger",
    "unbounded", "union", "unique", "update", "using", "vacuum", "values", "view", "virtual", "when", "where",
    "window", "with", "without"};

constexpr std::array kWriteKeywords = {"alter",  "analyze", "attach",   "begin",     "commit",      "create",
                                       "delete", "detach",  "drop",     "insert",    "into",        "pragma",
                                       "reindex", "release", "returning", "rollback", "savepoint", "transaction",
                                       "trigger", "update",  "vacuum"};

constexpr std::array kDeniedObjects = {"completion", "dbstat",   "fsdir",    "fts3tokenize", "fts4aux",
                                       "fts5vocab",  "sqlar",    "sqlite_dbdata", "sqlite_dbpage", "sqlite_dbptr",
                                       "sqlite_stmt", "zipfile", "zipfile_cds"};

template <size_t N>
constexpr bool sorted(const std::array<const char*, N>& a) {
  return std::is_sorted(a.begin(), a.end(), [](std::string_view x, std::string_view y) { return x < y; });
}
static_assert(sorted(kAllowedFunctions) && sorted(kKeywords) && sorted(kWriteKeywords) && sorted(kDeniedObjects),
              "lookup tables must stay sorted for binary_search");

template <size_t N>
bool contains(const std::array<const char*, N>& sorted, const std::string& key) {
  return std::binary_search(sorted.begin(), sorted.end(), key,
                            [](const auto& a, const auto& b) { return std::string_view(a) < std::string_view(b); });
}

}  // namespace

bool is_allowed_function(std::string_view name) { return contains(kAllowedFunctions, ascii_lower(name)); }

bool is_allowed_table_function(std::string_view name) {
  std::string n = ascii_lower(name);
  return n == "json_each" || n == "json_tree";
}

bool is_readable_system_table(std::string_view name) {
  std::string n = ascii_lower(name);
  return n == "sqlite_master" || n == "sqlite_schema" || n == "sqlite_temp_master" || n == "sqlite_temp_schema";
}

bool is_denied_object(std::string_view name) {
  std::string n = ascii_lower(name);
  if (contains(kDeniedObjects, n)) return true;
  if (n.starts_with("pragma_")) return true;
  return n.starts_with("sqlite_") && !is_readable_system_table(n) && n != "sqlite_version" && n != "sqlite_source_id";
}

bool is_sqlite_keyword(std::string_view name) { return contains(kKeywords, ascii_lower(name)); }

bool is_write_keyword(std::string_view name) { return contains(kWriteKeywords, ascii_lower(name)); }

}  // namespace causeway::sqlguard
