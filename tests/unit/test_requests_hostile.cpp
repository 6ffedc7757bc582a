// Bytes a client chose (invalid UTF-8, NUL, control characters, bare LF line ends) in the
// request head and body: captured as they came, stored as they came, and every output that
// shows requests stays valid UTF-8 and readable (docs/SECURITY.md "Bytes from requests").
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>

#include "diagnosis/request_latency.h"
#include "diagnosis/request_chains.h"
#include "requests/tracker.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tests/unit/request_feed.h"
#include "tests/unit/test_mcp_helpers.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using namespace causeway::requests;
using namespace causeway::requests::test_feed;
using json = nlohmann::json;

namespace {

// Each pattern once: a lone continuation byte, a truncated sequence, an overlong '/', a
// UTF-16 surrogate, NUL, an ANSI escape, BEL and DEL.
template <size_t N>
std::string bytes(const char (&s)[N]) { return std::string(s, N - 1); }  // NULs included
const std::string kBadPath = bytes("/v1/\x80x\xE2\x82/\xC0\xAF/\xED\xA0\x80/n\x00ul\x1B[31mred\x07\x7F");
const std::string kBadTenant = bytes("ten\xFF" "ant\x00\x1B]0;title\x07");
const std::string kBadId = "id-\xC3\x28-\x01\x02";
// As the body carries it (a JSON escape), and as stored after reading.
const std::string kBadModelJson = "llama\xF8\x88\x80\x80\x80-\\u001b[2J";
const std::string kBadModel = "llama\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD-\x1B[2J";

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // the strict dump: throws type_error.316 on invalid UTF-8
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

// No byte a terminal would act on: text output is for people.
bool no_controls(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
  return true;
}

void exec(const std::string& path, const std::string& sql, const std::vector<std::string>& args) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  for (size_t i = 0; i < args.size(); ++i)
    sqlite3_bind_text(st, static_cast<int>(i + 1), args[i].data(), static_cast<int>(args[i].size()), SQLITE_TRANSIENT);
  CHECK(sqlite3_step(st) == SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

}  // namespace

TEST_CASE("hostile heads: kept byte for byte, bare LF heads parsed as Node, h11 and Go parse them") {
  Feed f;
  f.accept(5);
  const std::string head = "POST " + kBadPath + "?q=1 HTTP/1.1\r\nX-Request-Id: " + kBadId + "\r\nX-Tenant: " + kBadTenant +
                           "\r\nContent-Length: ";
  const std::string body = "{\"model\":\"" + kBadModelJson + "\",\"stream\":false}";
  f.read(5, head + std::to_string(body.size()) + "\r\n\r\n" + body, 1);
  f.write(5, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 2);
  // Bare LF everywhere, the way `printf 'GET / HTTP/1.1\nHost: x\n\n' | nc` sends it.
  f.accept(6);
  f.read(6, "POST /lf HTTP/1.1\nHost: x\nX-Request-Id: lf-1\nContent-Length: 2\n\n{}", 3);
  f.write(6, "HTTP/1.1 200 OK\nContent-Length: 0\n\n", 4);
  // A mix: CRLF request line, LF fields, a bare-LF blank line.
  f.read(6, "GET /mixed HTTP/1.1\r\nX-Request-Id: lf-2\n\n", 5);
  f.write(6, "HTTP/1.1 204 No Content\r\n\r\n", 6);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].path == kBadPath);  // without the query string, every other byte as sent
  CHECK(rs[0].tenant == kBadTenant);
  CHECK(rs[0].request_id == kBadId);
  CHECK(rs[0].model == kBadModel);  // JSON strings are UTF-8: U+FFFD per bad byte
  CHECK(rs[0].status == 200);
  CHECK(rs[1].path == "/lf");
  CHECK(rs[1].request_id == "lf-1");
  CHECK(rs[1].prompt_bytes == 2);
  CHECK(rs[1].complete);
  CHECK(rs[2].path == "/mixed");
  CHECK(rs[2].request_id == "lf-2");
  CHECK(rs[2].status == 204);
  CHECK(f.t.counters().desync == 0);
}

TEST_CASE("hostile bytes stored in requests: every output that shows them stays valid and readable") {
  test::TempDir dir;
  const std::string path = dir.file("hostile.db");
  DemoOptions o;
  o.scenario = "requests-queueing";
  o.seed = 3;
  o.start_ns = 1'790'000'000'000'000'000;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  // Every request takes the hostile bytes (ids stay unique); the request chains are
  // computed again over them, so explain names hostile ids too.
  exec(path,
       "UPDATE requests SET request_id = ?1 || rowid, path = ?2, tenant = ?3, model = ?4, "
       "method = CASE WHEN rowid % 2 THEN method ELSE ?5 END",
       {kBadId, kBadPath, kBadTenant, kBadModelJson, "P\xFFST"});
  int64_t sid = 0;
  {
    auto db = open_read_only(path);
    REQUIRE(db);
    auto st = Statement::prepare(db->get(), "SELECT max(id) FROM sessions");
    REQUIRE(st);
    REQUIRE(st->step() == SQLITE_ROW);
    sid = st->col_int(0);
  }
  auto stored = store_request_chains(path, sid);
  REQUIRE_MESSAGE(stored.ok(), stored.error().message);
  CHECK(*stored >= 1);

  SUBCASE("requests --json and the library answer") {
    auto r = test::run_causeway({"requests", "--db", path, "--json"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(valid_utf8(r.out));
    json doc = json::parse(r.out);
    REQUIRE(!doc["requests"]["slowest"].empty());
    const json& s = doc["requests"]["slowest"][0];
    // Stored as sent; shown with U+FFFD for each bad byte, controls JSON-escaped.
    CHECK(s["path"].get<std::string>().find("\xEF\xBF\xBD") != std::string::npos);
    CHECK(s["path"].get<std::string>().find(std::string("n\x00ul", 4)) != std::string::npos);
    CHECK(s["tenant"].get<std::string>().rfind("ten\xEF\xBF\xBD" "ant", 0) == 0);
    CHECK(s["request_id"].get<std::string>().rfind("id-\xEF\xBF\xBD(-\x01\x02", 0) == 0);
    CHECK(s["model"].get<std::string>().rfind("llama\xEF\xBF\xBD", 0) == 0);
    // --tenant matches the stored bytes.
    auto db = open_read_only(path);
    REQUIRE(db);
    RequestQuery q;
    q.tenant = kBadTenant;
    auto filtered = request_latency_json(db->get(), q);
    REQUIRE(filtered);
    CHECK((*filtered)["requests"]["count"] == doc["requests"]["count"]);
    CHECK(valid_utf8(filtered->dump()));
  }
  SUBCASE("requests (text)") {
    auto r = test::run_causeway({"requests", "--db", path, "--metric", "e2e"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(valid_utf8(r.out));
    CHECK(no_controls(r.out));
    CHECK(r.out.find("/v1/\xEF\xBF\xBD") != std::string::npos);
  }
  SUBCASE("MCP get_request_latency") {
    auto s = test::make_mcp_server(path);
    json reply = test::call_tool(s, "get_request_latency", {{"metric", "itl"}});
    REQUIRE(reply.contains("result"));
    CHECK_FALSE(reply["result"].value("isError", false));
    const json& sc = reply["result"]["structuredContent"];
    REQUIRE(!sc["requests"]["slowest"].empty());
    CHECK(valid_utf8(sc.dump()));
    CHECK(sc["requests"]["slowest"][0]["tenant"].get<std::string>().rfind("ten\xEF\xBF\xBD", 0) == 0);
  }
  SUBCASE("explain --json and text: the request chains name the requests") {
    auto r = test::run_causeway({"explain", "--db", path, "--json"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(valid_utf8(r.out));
    json doc = json::parse(r.out);
    REQUIRE(!doc["chains"].empty());
    CHECK(doc["chains"][0]["level"] == "request");
    CHECK(r.out.find("id-\xEF\xBF\xBD") != std::string::npos);
    auto text = test::run_causeway({"explain", "--db", path});
    REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    CHECK(valid_utf8(text.out));
    CHECK(no_controls(text.out));
  }
  SUBCASE("report") {
    const std::string html = dir.file("r.html");
    auto r = test::run_causeway({"report", "--db", path, "-o", html});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string page = test::read_file(html);
    CHECK(valid_utf8(page));
    CHECK(page.find("\x1B[") == std::string::npos);
  }
}
