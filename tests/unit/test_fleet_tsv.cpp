// What ship sends and what the fleet readers parse: any byte string survives TabSeparated
// escaping and the reader's unescaping, a quoted literal cannot end early, and the endpoint
// refuses URLs and names that would be spliced into statements or leak credentials.
#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "fleet/endpoint.h"
#include "fleet/store_answer.h"
#include "fleet/tsv.h"
#include "tests/support/test_support.h"

namespace causeway::fleet {

TEST_CASE("TabSeparated: every byte string round-trips, rows and fields split where ClickHouse puts them") {
  std::mt19937 rng(23);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    std::string esc;
    tsv_escape_append(esc, s);
    CHECK(esc.find('\t') == std::string::npos);
    CHECK(esc.find('\n') == std::string::npos);
    CHECK(tsv_unescape(esc) == s);
  }
  std::string row;
  tsv_escape_append(row, "a\tb");
  row += '\t';
  tsv_escape_append(row, "line1\nline2\\");
  row += "\t\\N\nx\t7\t\n";
  const std::vector<ColumnKind> text3(3, ColumnKind::Text);
  auto rows = parse_typed_answer("a\tb\tc\nString\tString\tNullable(String)\n" + row, text3, "q");
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0] == std::vector<std::string>{"a\tb", "line1\nline2\\", "\\N"});
  CHECK((*rows)[1] == std::vector<std::string>{"x", "7", ""});
}

TEST_CASE("sql_quote: a quote or backslash in a host name cannot end the literal") {
  CHECK(sql_quote("node-a") == "'node-a'");
  CHECK(sql_quote("x' OR 1=1 --") == "'x\\' OR 1=1 --'");
  CHECK(sql_quote("a\\") == "'a\\\\'");
  CHECK(sql_quote(std::string("a\0b", 3)) == "'a\\0b'");
}

TEST_CASE("endpoint: scheme://host:port only, plain names, the password file trimmed") {
  test::TempDir dir;
  std::ofstream(dir.file("pw")) << "  s3cret \n\n";
  auto e = make_endpoint("http://ch:8123/", "causeway", "causeway_writer", dir.file("pw"));
  REQUIRE(e);
  CHECK(e->url == "http://ch:8123");
  CHECK(e->password == "s3cret");
  CHECK(make_endpoint("https://ch:8443", "fleet_1", "u", "")->password.empty());
  for (const char* bad : {"ftp://ch:21", "ch:8123", "http://ch:8123/path", "http://u:p@ch:8123", "http://ch:8123?user=x"})
    CHECK_MESSAGE(make_endpoint(bad, "causeway", "u", "").error().code == "usage", bad);
  CHECK(make_endpoint("http://ch:8123", "db; DROP", "u", "").error().code == "usage");
  CHECK(make_endpoint("http://ch:8123", "causeway", "u'x", "").error().code == "usage");
  CHECK(make_endpoint("http://ch:8123", "causeway", "u", dir.file("missing")).error().code == "fleet_password");
  CHECK(valid_identifier("_a1"));
  CHECK_FALSE(valid_identifier("1a"));
  CHECK_FALSE(valid_identifier(""));
}

}  // namespace causeway::fleet
