#include <doctest/doctest.h>

#include "synth/scenarios.h"

#include <algorithm>

#include <thread>

#include "tests/unit/test_mcp_fixture.h"
#include "tests/unit/test_mcp_helpers.h"
#include "tests/support/test_support.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace {
json req(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}
const json kModern = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                      {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}  // namespace

TEST_CASE("protocol: initialize echoes a supported version, else answers the latest") {
  auto s = make_mcp_server("/nonexistent/trace.db");
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    json r = rpc(s, req(1, "initialize", {{"protocolVersion", v}, {"capabilities", json::object()}}));
    CHECK(r["result"]["protocolVersion"] == v);
    CHECK(r["result"]["serverInfo"]["name"] == "causeway");
    CHECK(r["result"]["capabilities"].contains("tools"));
    CHECK_FALSE(r["result"].contains("resultType"));  // legacy results keep the legacy shape
  }
  json r = rpc(s, req(2, "initialize", {{"protocolVersion", "1999-01-01"}}));
  CHECK(r["result"]["protocolVersion"] == "2025-11-25");
}

TEST_CASE("protocol: notifications are never answered; errors echo the id") {
  auto s = make_mcp_server("/nonexistent/trace.db");
  CHECK(rpc(s, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).is_null());
  CHECK(rpc(s, {{"jsonrpc", "2.0"}, {"method", "no/such/notification"}}).is_null());
  json r = rpc(s, req(42, "no/such/method"));
  CHECK(r["error"]["code"] == -32601);
  CHECK(r["id"] == 42);
  r = rpc(s, req(43, "tools/call", {{"name", "nope"}}));
  CHECK(r["error"]["code"] == -32602);
  CHECK(r["id"] == 43);
  r = rpc(s, req(44, "tools/call", {{"arguments", json::object()}}));
  CHECK(r["error"]["code"] == -32602);
  r = rpc(s, req(45, "logging/setLevel", {{"level", "loud"}}));
  CHECK(r["error"]["code"] == -32602);
  r = rpc(s, req(46, "logging/setLevel", {{"level", "debug"}}));
  CHECK(r["result"] == json::object());  // legacy: an empty result stays empty
  CHECK(rpc(s, req(47, "ping"))["result"].is_object());
}

TEST_CASE("protocol: modern era — discover, per-request _meta, -32022") {
  auto s = make_mcp_server("/nonexistent/trace.db");
  json d = rpc(s, req(1, "server/discover", {{"_meta", kModern}}));
  CHECK(d["result"]["supportedVersions"][0] == "2026-07-28");
  CHECK(d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "causeway");
  CHECK(d["result"]["ttlMs"].get<int64_t>() > 0);
  json l = rpc(s, req(2, "tools/list", {{"_meta", kModern}}));
  CHECK(l["result"]["resultType"] == "complete");
  CHECK(l["result"]["cacheScope"] == "public");
  json bad_meta = kModern;
  bad_meta["io.modelcontextprotocol/protocolVersion"] = "2030-01-01";
  json e = rpc(s, req(3, "tools/list", {{"_meta", bad_meta}}));
  CHECK(e["error"]["code"] == -32022);
  CHECK(e["error"]["data"]["requested"] == "2030-01-01");
  CHECK(e["id"] == 3);
}

namespace {
// One request as the HTTP transport hands it over: body plus the SEP-2243 headers.
json rpc_with_headers(causeway::mcp::Server& s, const json& body, causeway::mcp::RequestHeaders h, bool* bad_request) {
  causeway::mcp::Exchange ex;
  ex.headers = std::move(h);
  auto out = s.handle(body.dump(), ex);
  *bad_request = ex.bad_request;
  return out ? json::parse(*out) : json();
}
}  // namespace

TEST_CASE("protocol: 2026-07-28 envelope — _meta required, headers agree with the body, handshake removed") {
  auto s = make_mcp_server("/nonexistent/trace.db");
  using causeway::mcp::RequestHeaders;
  bool bad = false;
  // The modern header makes a request modern: then _meta must carry version and capabilities.
  json r = rpc_with_headers(s, req(1, "tools/list"), RequestHeaders{"2026-07-28", "tools/list", std::nullopt}, &bad);
  CHECK(r["error"]["code"] == -32602);
  CHECK(r["id"] == 1);
  CHECK(bad);
  r = rpc_with_headers(s, req(2, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}),
                       RequestHeaders{"2026-07-28", "tools/list", std::nullopt}, &bad);
  CHECK(r["error"]["code"] == -32602);
  // Header and body disagree: -32020, whichever header it is.
  r = rpc_with_headers(s, req(3, "tools/list", {{"_meta", kModern}}), RequestHeaders{"2025-11-25", "tools/list", std::nullopt}, &bad);
  CHECK(r["error"]["code"] == -32020);
  r = rpc_with_headers(s, req(4, "tools/list", {{"_meta", kModern}}), RequestHeaders{"2026-07-28", std::nullopt, std::nullopt}, &bad);
  CHECK(r["error"]["code"] == -32020);
  r = rpc_with_headers(s, req(5, "tools/list", {{"_meta", kModern}}), RequestHeaders{"2026-07-28", "TOOLS/LIST", std::nullopt}, &bad);
  CHECK(r["error"]["code"] == -32020);
  r = rpc_with_headers(s, req(6, "prompts/get", {{"name", "investigate"}, {"_meta", kModern}}),
                       RequestHeaders{"2026-07-28", "prompts/get", std::nullopt}, &bad);
  CHECK(r["error"]["code"] == -32020);
  CHECK(r["id"] == 6);
  r = rpc_with_headers(s, req(7, "prompts/get", {{"name", "investigate"}, {"_meta", kModern}}),
                       RequestHeaders{"2026-07-28", "prompts/get", "investigate"}, &bad);
  CHECK(r.contains("result"));
  CHECK_FALSE(bad);
  // Removed in the stateless revision: unknown methods there, still served to legacy clients.
  for (const char* m : {"initialize", "ping", "logging/setLevel"}) {
    r = rpc_with_headers(s, req(8, m, {{"_meta", kModern}}), RequestHeaders{"2026-07-28", m, std::nullopt}, &bad);
    CHECK(r["error"]["code"] == -32601);
    CHECK_FALSE(bad);
  }
  // A legacy client's headers need no Mcp-Method.
  r = rpc_with_headers(s, req(9, "ping"), RequestHeaders{"2025-11-25", std::nullopt, std::nullopt}, &bad);
  CHECK(r["result"].is_object());
}

TEST_CASE("protocol: resources/read carries cache hints; not found is -32602 from 2026-07-28 on") {
  auto s = make_mcp_server("/nonexistent/trace.db");
  json r = rpc(s, req(1, "resources/read", {{"uri", "causeway://nope"}, {"_meta", kModern}}));
  CHECK(r["error"]["code"] == -32602);
  r = rpc(s, req(2, "resources/read", {{"uri", "causeway://nope"}}));
  CHECK(r["error"]["code"] == -32002);
}

TEST_CASE("protocol: list pagination with opaque cursors") {
  auto s = make_mcp_server("/nonexistent/trace.db");
  s.set_page_size(3);
  std::vector<std::string> names;
  json cursor;
  for (int page = 0; page < 10; ++page) {
    json params = json::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    json r = rpc(s, req(page, "tools/list", params));
    for (const auto& t : r["result"]["tools"]) names.push_back(t["name"]);
    if (!r["result"].contains("nextCursor")) break;
    cursor = r["result"]["nextCursor"];
  }
  // Every registered tool once, across the pages (the count follows the registry: a new tool
  // touches only the files docs/ARCHITECTURE.md lists).
  std::vector<std::string> registered;
  for (const auto& t : s.tools().tools()) registered.push_back(t.name());
  CHECK(registered.size() >= 10);
  std::sort(names.begin(), names.end());
  std::sort(registered.begin(), registered.end());
  CHECK(names == registered);
  CHECK(std::find(names.begin(), names.end(), "get_tail_breakdown") != names.end());
  CHECK(std::find(names.begin(), names.end(), "get_request_latency") != names.end());
  CHECK(rpc(s, req(99, "tools/list", {{"cursor", "garbage"}}))["error"]["code"] == -32602);
}

TEST_CASE("protocol: prompts and resources") {
  TempDir dir;
  std::string db = write_mcp_fixture(dir.path());
  auto s = make_mcp_server(db);
  json p = rpc(s, req(1, "prompts/list"));
  CHECK(p["result"]["prompts"][0]["name"] == "investigate");
  json g = rpc(s, req(2, "prompts/get", {{"name", "investigate"}, {"arguments", {{"since", "5m"}, {"pid", "4821"}}}}));
  std::string text = g["result"]["messages"][0]["content"]["text"];
  for (const char* step : {"get_check", "get_trace_stats", "get_causal_chains", "get_stacks", "describe_schema", "run_sql", "Fix", "min_severity", "cursor"})
    CHECK(text.find(step) != std::string::npos);
  CHECK(text.find("\"pid\": 4821") != std::string::npos);
  CHECK(rpc(s, req(3, "prompts/get", {{"name", "investigate"}, {"arguments", {{"since", "soon"}}}}))["error"]["code"] == -32602);
  CHECK(rpc(s, req(4, "prompts/get", {{"name", "other"}}))["error"]["code"] == -32602);
  // The fixture served no HTTP requests: the workflow starts from the chains.
  CHECK(text.find("get_request_latency") == std::string::npos);
  json r = rpc(s, req(5, "resources/read", {{"uri", "causeway://sessions"}}));
  CHECK(json::parse(r["result"]["contents"][0]["text"].get<std::string>())["sessions"].size() == 1);
  CHECK(rpc(s, req(6, "resources/read", {{"uri", "file:///etc/passwd"}}))["error"]["code"] == -32002);
}

TEST_CASE("protocol: progress notifications when a progressToken is given") {
  TempDir dir;
  std::string db = write_mcp_fixture(dir.path());
  auto s = make_mcp_server(db, dir.file("demo"));
  std::vector<json> notes;
  json r = rpc(s, req(1, "tools/call", {{"name", "run_demo"}, {"arguments", {{"scenario", "incident"}}}, {"_meta", {{"progressToken", 7}}}}),
               &notes);
  CHECK(r["result"]["isError"] == false);
  REQUIRE(notes.size() >= 2);
  CHECK(notes[0]["method"] == "notifications/progress");
  CHECK(notes[0]["params"]["progressToken"] == 7);
  // No token, no notifications.
  notes.clear();
  rpc(s, req(2, "tools/call", {{"name", "get_trace_stats"}, {"arguments", json::object()}}), &notes);
  CHECK(notes.empty());
}

TEST_CASE("protocol: notifications/cancelled interrupts a running query") {
  TempDir dir;
  std::string db = write_mcp_fixture(dir.path());
  auto s = make_mcp_server(db);
  // A query that runs for the full deadline unless interrupted.
  json slow = req(9, "tools/call", {{"name", "run_sql"},
      {"arguments", {{"query", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}}}});
  json reply;
  auto t0 = std::chrono::steady_clock::now();
  std::thread worker([&] { reply = rpc(s, slow, nullptr, "client-a"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  rpc(s, {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 9}, {"reason", "user"}}}}, nullptr, "client-a");
  worker.join();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 2000);          // well before the 5 s deadline
  CHECK(reply.is_null());    // a cancelled request gets no response
}

TEST_CASE("protocol: over HTTP a cancelled request still gets an answer (-32800)") {
  TempDir dir;
  std::string db = write_mcp_fixture(dir.path());
  auto s = make_mcp_server(db);
  json slow = req(5, "tools/call", {{"name", "run_sql"},
      {"arguments", {{"query", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}}}});
  std::optional<std::string> reply;
  std::thread worker([&] {
    mcp::Exchange ex;
    ex.scope = "10.0.0.1";
    ex.answer_cancelled = true;
    reply = s.handle(slow.dump(), ex);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  rpc(s, {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 5}}}}, nullptr, "10.0.0.1");
  worker.join();
  REQUIRE(reply.has_value());
  json r = json::parse(*reply);
  CHECK(r["error"]["code"] == -32800);
  CHECK(r["id"] == 5);
}

TEST_CASE("protocol: the investigate prompt starts from requests when the session served any") {
  TempDir dir;
  DemoOptions o;
  o.scenario = "requests-queueing";
  REQUIRE(run_demo(dir.file("served.db"), o).ok());
  auto s = make_mcp_server(dir.file("served.db"));
  json g = rpc(s, req(1, "prompts/get", {{"name", "investigate"}, {"arguments", {{"pid", "5300"}}}}));
  const std::string text = g["result"]["messages"][0]["content"]["text"];
  const size_t requests = text.find("2a. Requests first"), chains = text.find("get_causal_chains");
  REQUIRE(requests != std::string::npos);
  CHECK(requests < chains);  // before the call-level chains
  CHECK(text.find("get_request_latency {\"pid\": 5300}") != std::string::npos);
  CHECK(text.find("\"metric\": \"itl\"") != std::string::npos);
  // A DB that cannot be read yet: the model is asked to look.
  auto missing = make_mcp_server(dir.file("not-yet.db"));
  g = rpc(missing, req(2, "prompts/get", {{"name", "investigate"}}));
  CHECK(g["result"]["messages"][0]["content"]["text"].get<std::string>().find("If its count is above 0") != std::string::npos);
}
