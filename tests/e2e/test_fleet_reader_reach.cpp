// Issue 35 item 6: the example reader reached the whole ClickHouse server. Through `mcp
// --fleet` run_sql (any MCP token holder, or the model) it read another team's table, listed
// every database, and read other users' query text from system.processes. Here the reader of
// examples/clickhouse/users.xml, unchanged, on a private server that also holds
// `otherteam.secrets`:
//   - the server refuses it other databases and lists only `causeway` (and `system`);
//   - run_sql refuses system.processes and the other server-wide system tables, and passes
//     on the server's refusal of otherteam.secrets;
//   - `mcp --fleet` starts as this reader, refuses (exit 1, the reason) as a user that can
//     read other databases or write, and starts as that user with --allow-broad-reader.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <sstream>

#include "fleet/clickhouse.h"
#include "tests/e2e/clickhouse_fixture.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace causeway::test {
namespace {

std::unique_ptr<ClickHouseServer>& reach_server() {
  static std::unique_ptr<ClickHouseServer> s;
  return s;
}

}  // namespace

std::string missing_requirement() {
  reach_server() = std::make_unique<ClickHouseServer>(ReaderReach::kAsInExample);
  if (reach_server()->skipped()) return "clickhouse-server unavailable: " + reach_server()->problem();
  return "";
}

}  // namespace causeway::test

namespace {

ClickHouseServer& ch() {
  REQUIRE_MESSAGE(reach_server()->problem().empty(), reach_server()->problem());
  return *reach_server();
}

// The fleet database `causeway` with one shipped host, and another team's table beside it.
void fill_store_once() {
  static bool done = false;
  if (done) return;
  TempDir dir;
  const std::string db = dir.file("host.db");
  REQUIRE(run_causeway({"demo", "nccl-straggler", "--db", db, "-q"}).exit_code == 0);
  auto shipped = run_causeway({"ship", "--json", "--to", ch().url(), "--db", db, "--user", "causeway_writer", "--password-file",
                               ch().writer_pw_file(), "--database", "causeway"});
  INFO(shipped.err, shipped.out);
  REQUIRE(shipped.exit_code == 0);
  auto w = ch().writer("default");
  REQUIRE(w.execute("CREATE DATABASE IF NOT EXISTS otherteam").ok());
  REQUIRE(w.execute("CREATE TABLE IF NOT EXISTS otherteam.secrets (k String, v String) ENGINE = Memory").ok());
  REQUIRE(w.execute("INSERT INTO otherteam.secrets VALUES ('db_password', 'hunter2')").ok());
  done = true;
}

fleet::ClickHouse reader() {
  auto e = fleet::make_endpoint(ch().url(), "causeway", "causeway_reader", ch().reader_pw_file());
  REQUIRE(e.ok());
  return fleet::ClickHouse(*e);
}

// `causeway mcp --fleet` over stdio as `user`: initialize, then each tools/call of run_sql in
// `queries`; returns the process result and the answers by id (2, 3, …).
struct McpRun {
  ProcessResult process;
  std::vector<json> answers;
};
McpRun mcp_fleet(const std::string& user, const std::string& pw_file, const std::vector<std::string>& queries,
                 const std::vector<std::string>& extra = {}) {
  std::string in = json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                        {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()},
                                    {"clientInfo", {{"name", "reach-test"}, {"version", "1"}}}}}}.dump() + "\n" +
                   json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump() + "\n";
  for (size_t i = 0; i < queries.size(); ++i)
    in += json{{"jsonrpc", "2.0"}, {"id", 2 + i}, {"method", "tools/call"},
               {"params", {{"name", "run_sql"}, {"arguments", {{"query", queries[i]}}}}}}.dump() + "\n";
  // stdin stays open a while after the requests: EOF would cancel the calls still running.
  TempDir dir;
  std::ofstream(dir.file("in.jsonl")) << in;
  std::vector<std::string> argv = {"sh", "-c", "(cat \"$0\"; sleep 8) | \"$@\"", dir.file("in.jsonl"), causeway_bin(), "mcp", "--fleet",
                                   ch().url(), "--database", "causeway", "--user", user, "--password-file", pw_file};
  argv.insert(argv.end(), extra.begin(), extra.end());
  McpRun run{run_process(argv), std::vector<json>(queries.size())};
  std::istringstream lines(run.process.out);
  for (std::string line; std::getline(lines, line);) {
    json m = json::parse(line, nullptr, false);
    if (m.is_object() && m.contains("id") && m["id"].is_number() && m["id"].get<int>() >= 2 && m.contains("result"))
      run.answers.at(m["id"].get<size_t>() - 2) = m["result"];
  }
  return run;
}

std::string text_of(const json& result) { return result.value("content", json::array()).at(0).value("text", ""); }

}  // namespace

TEST_CASE("the example reader reads the fleet database only") {
  fill_store_once();
  auto r = reader();
  CHECK(r.select("SELECT count() FROM causeway.events", {fleet::ColumnKind::Int}).ok());
  auto secret = r.select("SELECT * FROM otherteam.secrets", {fleet::ColumnKind::Text});
  REQUIRE_FALSE(secret.ok());
  CHECK(secret.error().message.find("Access denied to database otherteam") != std::string::npos);
  auto dbs = r.select("SELECT name FROM system.databases ORDER BY name", {fleet::ColumnKind::Text});
  REQUIRE(dbs.ok());
  std::vector<std::string> names;
  for (const auto& row : *dbs) names.push_back(row.at(0));
  CHECK(names == std::vector<std::string>{"causeway", "system"});
  auto tables = r.select("SELECT count() FROM system.tables WHERE database = 'otherteam'", {fleet::ColumnKind::Int});
  REQUIRE(tables.ok());
  CHECK(tables->at(0).at(0) == "0");
  // Writes stay refused by the profile (readonly=1).
  auto write = r.execute("INSERT INTO causeway.events (host) VALUES ('x')");
  REQUIRE_FALSE(write.ok());
  CHECK(write.error().message.find("readonly") != std::string::npos);
}

TEST_CASE("mcp --fleet as the example reader: run_sql reads the store, not another team's table or system.processes") {
  fill_store_once();
  auto run = mcp_fleet("causeway_reader", ch().reader_pw_file(),
                       {"SELECT count() AS n FROM events", "SELECT * FROM otherteam.secrets",
                        "SELECT user, query FROM system.processes", "SELECT query FROM system.query_log",
                        "SELECT name FROM system.databases ORDER BY name"});
  INFO(run.process.err);
  REQUIRE(run.process.exit_code == 0);
  CHECK(run.answers[0].value("isError", true) == false);
  CHECK(run.answers[0]["structuredContent"]["rows"][0][0].get<int64_t>() > 0);
  CHECK(run.answers[1].value("isError", false) == true);
  CHECK(text_of(run.answers[1]).find("Access denied to database otherteam") != std::string::npos);
  CHECK(text_of(run.answers[1]).find("hunter2") == std::string::npos);
  for (int i : {2, 3}) {
    CHECK(run.answers[i].value("isError", false) == true);
    CHECK(text_of(run.answers[i]).find("system tables other than the catalog") != std::string::npos);
  }
  CHECK(run.answers[4].value("isError", true) == false);
  CHECK(run.answers[4]["structuredContent"]["rows"] == json::array({json::array({"causeway"}), json::array({"system"})}));
}

TEST_CASE("mcp --fleet refuses a user that reaches more than the fleet database, unless told to accept it") {
  fill_store_once();
  // causeway_writer: readonly=0 and no allow_databases (it creates the database).
  auto refused = mcp_fleet("causeway_writer", ch().writer_pw_file(), {"SELECT 1"});
  CHECK(refused.process.exit_code == 1);
  CHECK(refused.process.out.empty());
  const std::string& err = refused.process.err;
  INFO(err);
  CHECK(err.find("can read databases other than causeway") != std::string::npos);
  CHECK(err.find("otherteam") != std::string::npos);
  CHECK(err.find("can write") != std::string::npos);
  CHECK(err.find("--allow-broad-reader") != std::string::npos);

  auto accepted = mcp_fleet("causeway_writer", ch().writer_pw_file(), {"SELECT 1 AS one"}, {"--allow-broad-reader"});
  INFO(accepted.process.err);
  CHECK(accepted.process.exit_code == 0);
  CHECK(accepted.answers[0].value("isError", true) == false);

  // A store that cannot be asked: an error that says so, not a server that starts unchecked.
  auto e = run_causeway({"mcp", "--fleet", ch().closed_url(), "--user", "causeway_reader", "--password-file", ch().reader_pw_file()},
                        {}, "");
  CHECK(e.exit_code == 1);
  CHECK(e.err.find("cannot check what causeway_reader can reach") != std::string::npos);
}
