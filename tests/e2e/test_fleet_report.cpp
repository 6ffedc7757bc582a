// `causeway report --fleet` against a real clickhouse-server (tests/e2e/clickhouse_fixture.h):
// two hosts shipped by the writer — node-a ran the NCCL late-rank job (its chains kept),
// node-b served requests (the queueing demo, its request chains kept) — and the page drawn as
// the read-only user (a readonly=1 profile: no query may send a setting). It names both hosts,
// the straggler chain with its culprit's host and swimlanes read from the store, the request
// chain first with a lane per slowed request, one op histogram per (host, process, op) and the
// requests' tail coloured by cause; it holds nothing a browser could fetch. Bad input (a
// closed port, a wrong password) fails with a clear error and leaves no file.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>

#include "tests/e2e/clickhouse_fixture.h"
#include "tests/support/report_checks.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::test {

namespace {

using json = nlohmann::json;
constexpr const char* kDatabase = "fleet_report";

ClickHouseServer& ch() { return running_server(); }

// A demo DB renamed as one host of the fleet (its own hostname and boot id).
std::string demo_host(const TempDir& dir, const std::string& scenario, const std::string& host) {
  const std::string db = dir.file(host + ".db");
  auto r = run_causeway({"demo", scenario, "--db", db, "-q"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
  DbHandle h(raw);
  // The demo names its own host in the chains too (culprit.host): as a host tracing itself would.
  auto ok = exec_sql(h.get(), "UPDATE sessions SET host = '" + host + "', boot_id = 'boot-" + host +
                                  "', system = json_set(system, '$.hostname', '" + host + "'); UPDATE chains SET doc = "
                                  "json_set(doc, '$.culprit.host', '" + host + "') WHERE json_extract(doc, '$.culprit.host') IS NOT NULL");
  REQUIRE_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.error().message));
  return db;
}

std::vector<std::string> reader(const std::string& pw_file) {
  return {"--user", "causeway_reader", "--password-file", pw_file, "--database", kDatabase};
}

ProcessResult report(const std::string& url, const std::string& out, const std::string& pw_file, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"report", "--fleet", url, "-o", out};
  for (auto& a : reader(pw_file)) args.push_back(a);
  for (auto& a : extra) args.push_back(a);
  return run_causeway(args);
}

// The <section> that starts at the first occurrence of `marker`.
std::string section_at(const std::string& html, const std::string& marker) {
  const size_t at = html.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = html.rfind("<section", at);
  return html.substr(start, html.find("</section>", at) - start);
}

struct Fleet {
  TempDir dir;
  Fleet() {
    for (const auto& [scenario, host] : {std::pair{"nccl-straggler", "node-a"}, std::pair{"requests-queueing", "node-b"}}) {
      const std::string db = demo_host(dir, scenario, host);
      auto r = run_causeway({"ship", "--to", ch().url(), "--db", db, "--user", "causeway_writer", "--password-file",
                             ch().writer_pw_file(), "--database", kDatabase});
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    }
  }
};

Fleet& fleet() {
  static Fleet f;
  return f;
}

}  // namespace

TEST_CASE("report --fleet: both hosts, the straggler with its host, request chains first, op histograms, offline") {
  const std::string out = fleet().dir.file("fleet.html");
  auto r = report(ch().url(), out, ch().reader_pw_file());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("the fleet store at 127.0.0.1:") != std::string::npos);
  const std::string html = read_file(out);
  check_self_contained(html);

  // The header and the hosts table name both hosts; the straggler's host is highlighted.
  CHECK(html.find("2 hosts: node-a, node-b") != std::string::npos);
  const std::string hosts = section_at(html, "id=\"hosts\"");
  CHECK(count_of(hosts, "<tr") == 3);
  CHECK(hosts.find("<tr class=\"straggler\"><td>node-a</td>") != std::string::npos);

  // The chains, as explain --fleet lists them: the request chain (node-b) first.
  auto ex = run_causeway({"explain", "--json", "--limit", "100", "--fleet", ch().url(), "--user", "causeway_reader",
                          "--password-file", ch().reader_pw_file(), "--database", kDatabase});
  REQUIRE_MESSAGE(ex.exit_code == 0, ex.err);
  const json chains = json::parse(ex.out)["chains"];
  REQUIRE(chains.size() >= 2);
  CHECK(count_of(html, "<section class=\"chain ") == std::min<size_t>(chains.size(), 10));
  REQUIRE(chains[0]["level"] == "request");
  const std::string first = section_at(html, "id=\"chain-1\"");
  CHECK(first.find("data-cause=\"" + chains[0]["cause"].get<std::string>() + "\"") != std::string::npos);
  CHECK(first.find("(host node-b)") != std::string::npos);
  // Its timeline: the slowed requests' spans, read from the store's requests table.
  REQUIRE(!chains[0]["requests"].empty());
  CHECK(count_of(first, "data-lane=\"request\"") >= 1);
  CHECK(first.find(">req " + chains[0]["requests"][0].get<std::string>() + "</text>") != std::string::npos);

  // The straggler chain names its culprit's host and draws swimlanes from node-a's rows.
  const std::string straggler = section_at(html, "data-cause=\"nccl_straggler\"");
  REQUIRE(!straggler.empty());
  CHECK(straggler.find("on host <b class=\"host\">node-a</b>") != std::string::npos);
  CHECK(straggler.find("<figure class=\"swimlanes\">") != std::string::npos);
  CHECK(straggler.find("data-lane=\"calls\"") != std::string::npos);

  // One histogram per (host, process, op) of stats --fleet, up to 24, each titled with its host.
  auto st = run_causeway({"stats", "--json", "--fleet", ch().url(), "--user", "causeway_reader", "--password-file",
                          ch().reader_pw_file(), "--database", kDatabase});
  REQUIRE_MESSAGE(st.exit_code == 0, st.err);
  const json stats = json::parse(st.out);
  size_t with_calls = 0;
  for (const auto& o : stats["ops"]) with_calls += o["count"].get<int64_t>() > 0;
  CHECK(count_of(html, "<figure class=\"op\"") == std::min<size_t>(with_calls, 24));
  CHECK(html.find(" on node-a)</b>") != std::string::npos);
  CHECK(html.find(" on node-b)</b>") != std::string::npos);
  // Each of node-a's histograms has the calls and the tail by cause of node-a's own report
  // (the store's call_causes against the host's): same counts, same shares.
  const std::string local_out = fleet().dir.file("node-a.html");
  auto local = run_causeway({"report", "--db", fleet().dir.file("node-a.db"), "-o", local_out});
  REQUIRE_MESSAGE(local.exit_code == 0, local.err);
  const std::string local_html = read_file(local_out);
  static const std::regex caption(R"re(<figcaption><b>([^<]*) \(pid (\d+)( on node-a)?\)</b>.*?<br>(\d+ calls) .*?(<br>tail .*?)?</figcaption>)re");
  std::map<std::string, std::string> want, got;
  for (auto [page, into] : {std::pair{&local_html, &want}, std::pair{&html, &got}})
    for (std::sregex_iterator it(page->begin(), page->end(), caption), end; it != end; ++it)
      if (page == &local_html || (*it)[3].matched) (*into)[(*it)[1].str() + " pid " + (*it)[2].str()] = (*it)[4].str() + (*it)[5].str();
  CHECK(want.size() >= 4);
  CHECK(got.size() >= 4);
  size_t tails = 0;
  for (const auto& [op, text] : want) {
    CAPTURE(op);
    if (!got.count(op)) continue;  // past the 24 drawn
    CHECK(got[op] == text);
    tails += text.find("tail (") != std::string::npos && text.find("cold_start") != std::string::npos;
  }
  CHECK(tails >= 2);  // the late rank's tail coloured by the causes the host found

  // The requests section: node-b's requests, the TTFT tail split by the hosts' request chains.
  const std::string reqs = section_at(html, "id=\"requests\"");
  REQUIRE(!reqs.empty());
  CHECK(reqs.find("<tr data-cause=\"queueing\">") != std::string::npos);
}

TEST_CASE("report --fleet --pid: one pid on any host; --since; --session is refused") {
  const std::string out = fleet().dir.file("pid.html");
  auto r = report(ch().url(), out, ch().reader_pw_file(), {"--pid", "6003", "--since", "1h"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string html = read_file(out);
  check_self_contained(html);
  CHECK(html.find("process 6003 on any host only") != std::string::npos);
  // Only that process's ops: every histogram title names pid 6003.
  CHECK(count_of(html, "<figure class=\"op\"") > 0);
  CHECK(count_of(html, "<figure class=\"op\"") == count_of(html, "(pid 6003 on node-a)</b>"));
  auto s = report(ch().url(), fleet().dir.file("s.html"), ch().reader_pw_file(), {"--session", "1"});
  CHECK(s.exit_code != 0);
  CHECK(s.err.find("--session") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(fleet().dir.file("s.html")));
}

TEST_CASE("report --fleet: a closed port or a wrong password is a clear error and leaves no file") {
  TempDir dir;
  const std::string out = dir.file("bad.html");
  auto closed = report(ch().closed_url(), out, ch().reader_pw_file());
  CHECK(closed.exit_code != 0);
  CHECK_MESSAGE(closed.err.find("cannot reach ClickHouse") != std::string::npos, closed.err);
  std::ofstream(dir.file("wrong.pw")) << "not-the-password\n";
  auto wrong = report(ch().url(), out, dir.file("wrong.pw"));
  CHECK(wrong.exit_code != 0);
  CHECK_MESSAGE(wrong.err.find("Wrong password") != std::string::npos, wrong.err);
  // Nothing written: neither the page nor a temporary beside it.
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 1);  // wrong.pw
  CHECK_FALSE(std::filesystem::exists(out));
}

}  // namespace causeway::test
