#include "sqlguard/clickhouse_guard.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "common/sanitize.h"
#include "sqlguard/validator.h"

namespace causeway::sqlguard {

namespace {

struct Word {
  std::string upper;  // a bare word, upper-cased; ";" or "." for those; a quoted name's text
  size_t offset = 0;
  bool quoted = false;  // a `name` or "name": never a keyword
};

Error rejected(size_t offset, const std::string& token, const std::string& why) {
  return make_error("sql_rejected", "ClickHouse SQL refused at byte " + std::to_string(offset) +
                                        (token.empty() ? "" : " (" + sanitize_untrusted(token, 40) + ")") + ": " + why);
}

// Skips a quoted run opened at s[i] by `q`: ClickHouse ends it at an unescaped `q`, where
// a backslash escapes the next byte and a doubled quote stands for one. Returns the index
// past it, or npos when it never ends.
size_t skip_quoted(std::string_view s, size_t i, char q) {
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') ++j;
    else if (s[j] == q) {
      if (j + 1 < s.size() && s[j + 1] == q) ++j;
      else return j + 1;
    }
  }
  return std::string_view::npos;
}

// The bare words and semicolons of `sql`, outside strings, quoted names and comments (--,
// #, and /* */, which ClickHouse nests). `end` gets the offset past the last word.
Result<std::vector<Word>> words(std::string_view s, size_t& end) {
  std::vector<Word> out;
  end = 0;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0) return rejected(i, "", "a NUL byte");
    if (std::isspace(c)) { ++i; continue; }
    if ((c == '-' && i + 1 < s.size() && s[i + 1] == '-') || c == '#') {
      const size_t nl = s.find('\n', i);
      i = nl == std::string_view::npos ? s.size() : nl + 1;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t depth = 1, j = i + 2;
      for (; j < s.size() && depth; ++j) {
        if (s[j] == '/' && j + 1 < s.size() && s[j + 1] == '*') ++depth, ++j;
        else if (s[j] == '*' && j + 1 < s.size() && s[j + 1] == '/') --depth, ++j;
      }
      if (depth) return rejected(i, "/*", "a comment that never ends");
      i = j;
      continue;
    }
    if (c == '\'' || c == '"' || c == '`') {
      const size_t j = skip_quoted(s, i, static_cast<char>(c));
      if (j == std::string_view::npos) return rejected(i, std::string(1, static_cast<char>(c)), "a quote that never ends");
      // A quoted name is kept (upper-cased, quotes off) for the database.table check; escapes
      // are left in, so an escaped name never matches a plain one it might stand for.
      if (c != '\'') {
        std::string w(s.substr(i + 1, j - i - 2));
        std::transform(w.begin(), w.end(), w.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
        out.push_back({std::move(w), i, true});
      }
      i = end = j;
      continue;
    }
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      std::string w(s.substr(i, j - i));
      std::transform(w.begin(), w.end(), w.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
      out.push_back({std::move(w), i});
      i = end = j;
      continue;
    }
    if (c == ';') out.push_back({";", i});
    else {
      if (c == '.') out.push_back({".", i});
      end = i + 1;
    }
    ++i;
  }
  return out;
}

// The system tables a fleet reader may name: the catalog of its own database (ClickHouse
// filters these to the databases the user may read) and constant tables. Not processes,
// query_log and the other logs (every user's query text), users, clusters, macros,
// dictionaries, replicas, mutations, merges: ClickHouse shows those to every user
// (docs/FLEET.md "What a reader can see").
bool system_table_allowed(const std::string& upper) {
  static const std::vector<std::string> allowed = {"ONE", "NUMBERS", "NUMBERS_MT", "ZEROS", "ZEROS_MT", "DATABASES", "TABLES",
                                                   "COLUMNS", "PARTS", "PARTS_COLUMNS", "FUNCTIONS", "AGGREGATE_FUNCTION_COMBINATORS",
                                                   "DATA_TYPE_FAMILIES", "TABLE_ENGINES", "FORMATS", "TIME_ZONES", "SETTINGS"};
  return std::find(allowed.begin(), allowed.end(), upper) != allowed.end();
}

}  // namespace

Result<std::string> clickhouse_select(std::string_view sql) {
  if (sql.size() > kMaxSqlBytes) return rejected(kMaxSqlBytes, "", "longer than " + std::to_string(kMaxSqlBytes) + " bytes");
  size_t end = 0;
  auto w = words(sql, end);
  if (!w) return w.error();
  if (w->empty() || (w->front().upper != "SELECT" && w->front().upper != "WITH"))
    return rejected(w->empty() ? 0 : w->front().offset, w->empty() ? "" : w->front().upper,
                    "only one SELECT (or WITH ... SELECT) statement is run here; the fleet store is read-only");
  for (size_t i = 0; i + 2 < w->size(); ++i) {
    const Word &db = (*w)[i], &dot = (*w)[i + 1], &table = (*w)[i + 2];
    if (db.upper == "SYSTEM" && dot.upper == "." && !dot.quoted && table.upper != "." && table.upper != ";" &&
        !system_table_allowed(table.upper))
      return rejected(table.offset, "system." + table.upper,
                      "system tables other than the catalog (tables, columns, databases, parts, functions, settings, one, numbers) "
                      "are not read here: they show the whole server, other users' queries included");
  }
  for (size_t i = 0; i < w->size(); ++i) {
    const Word& x = (*w)[i];
    // A quoted name, or the table of `system.<table>` (system.settings), is no keyword.
    if (x.quoted || (i >= 2 && (*w)[i - 1].upper == "." && (*w)[i - 2].upper == "SYSTEM")) continue;
    if (x.upper == ";" && x.offset < end)
      return rejected(x.offset, ";", "one statement only: remove what follows the semicolon");
    if (x.upper == "FORMAT") return rejected(x.offset, x.upper, "leave out FORMAT: results come back as JSON rows");
    if (x.upper == "SETTINGS" || x.upper == "SET")
      return rejected(x.offset, x.upper, "settings cannot be changed: the read-only profile sets the limits");
    if (x.upper == "OUTFILE") return rejected(x.offset, x.upper, "INTO OUTFILE writes a file; results come back as rows");
  }
  return std::string(sql.substr(0, end));
}

}  // namespace causeway::sqlguard
