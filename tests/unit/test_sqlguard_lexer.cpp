// sqlguard lexer: splits SQL as SQLite does; unterminated or ambiguous tokens are errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sqlguard/lexer.h"

using namespace causeway::sqlguard;

namespace {

std::vector<std::string> significant(std::string_view sql) {
  LexResult r = tokenize(sql);
  REQUIRE_FALSE(r.error);
  std::vector<std::string> out;
  for (const Token& t : r.tokens)
    if (t.significant()) out.emplace_back(t.text);
  return out;
}

}  // namespace

TEST_CASE("tokens cover the input contiguously") {
  std::string sql = "SELECT a.b, 'x''y' AS \"q\"\"q\", [br], `bt`, X'0aFF', 1.5e-3, .5, 0x1f -- c\n/* d */;";
  LexResult r = tokenize(sql);
  REQUIRE_FALSE(r.error);
  size_t at = 0;
  for (const Token& t : r.tokens) {
    CHECK(t.offset == at);
    at += t.text.size();
  }
  CHECK(at == sql.size());
}

TEST_CASE("strings, quoted identifiers and comments hide keywords") {
  CHECK(significant("SELECT 'DROP TABLE x' -- DELETE\n") == std::vector<std::string>{"SELECT", "'DROP TABLE x'"});
  CHECK(significant("SELECT /* ; DELETE */ \"a;b\"") == std::vector<std::string>{"SELECT", "\"a;b\""});
  CHECK(significant("SELECT 'it''s'") == std::vector<std::string>{"SELECT", "'it''s'"});
  CHECK(significant("SELECT [a;b]") == std::vector<std::string>{"SELECT", "[a;b]"});
}

TEST_CASE("operators as SQLite reads them") {
  CHECK(significant("a->>'$.x'") == std::vector<std::string>{"a", "->>", "'$.x'"});
  CHECK(significant("a<>b||c!=d<<2") == std::vector<std::string>{"a", "<>", "b", "||", "c", "!=", "d", "<<", "2"});
  CHECK(significant("x'ab'") == std::vector<std::string>{"x'ab'"});
  CHECK(significant("xab") == std::vector<std::string>{"xab"});
}

TEST_CASE("whitespace of every ASCII kind separates words") {
  CHECK(significant("DROP\tTABLE\fx\r\n") == std::vector<std::string>{"DROP", "TABLE", "x"});
}

TEST_CASE("identifier names are unquoted") {
  LexResult r = tokenize("\"a\"\"b\" [c d] `e``f`");
  REQUIRE_FALSE(r.error);
  std::vector<std::string> names;
  for (const Token& t : r.tokens)
    if (t.kind == TokenKind::quoted_id) names.push_back(identifier_name(t));
  CHECK(names == std::vector<std::string>{"a\"b", "c d", "e`f"});
}

TEST_CASE("unterminated and illegal tokens are errors with their offset") {
  struct Case {
    std::string sql;
    size_t offset;
    std::string needle;
  };
  std::vector<Case> cases = {
      {"SELECT 'abc", 7, "unterminated string"},
      {"SELECT \"abc", 7, "unterminated quoted identifier"},
      {"SELECT [abc", 7, "unterminated quoted identifier"},
      {"SELECT `abc", 7, "unterminated quoted identifier"},
      {"SELECT 1 /* x", 9, "unterminated /* comment"},
      {"SELECT X'abc'", 7, "odd number"},
      {"SELECT X'zz'", 9, "non-hex"},
      {"SELECT X'ab", 7, "unterminated blob"},
      {"SELECT 12abc", 7, "malformed number"},
      {"SELECT 1 \\", 9, "unexpected character"},
      {"SELECT 1 # x", 9, "unexpected character"},
      {"SELECT !1", 7, "unexpected character"},
      {std::string("SELECT 1\0; DROP TABLE x", 23), 8, "NUL"},
      {"SELECT \xc2\xa0" "1", 7, "U+00A0"},
      {"SELECT 1;\xe2\x80\x8b" "DROP", 9, "U+200B"},
      {"\xef\xbb\xbf" "SELECT 1", 0, "U+FEFF"},
      {"SELECT \xff", 7, "invalid UTF-8"},
      {"SELECT 1 \x0b", 9, "unexpected character"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.sql);
    LexResult r = tokenize(c.sql);
    REQUIRE(r.error);
    CHECK(r.error->offset == c.offset);
    CHECK(r.error->message.find(c.needle) != std::string::npos);
  }
}

TEST_CASE("Unicode inside strings, quoted identifiers and comments is data") {
  CHECK_FALSE(tokenize("SELECT 'a\xc2\xa0" "b', \"\xe2\x80\x8b\" -- \xc2\xa0\n").error);
  CHECK_FALSE(tokenize("SELECT caf\xc3\xa9").error);  // non-ASCII letters are identifier characters
}

TEST_CASE("line comment runs to end of input") {
  CHECK(significant("SELECT 1 -- no newline") == std::vector<std::string>{"SELECT", "1"});
}
