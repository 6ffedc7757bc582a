// The request demo scenarios (docs/INFERENCE.md "Demo scenarios"): each names its planted
// request cause first in the tail of `causeway requests` (the metric where it shows), with
// its culprit; the quiet server has no request cause of note.
#include <doctest/doctest.h>

#include <set>
#include <tuple>

#include "diagnosis/request_latency.h"
#include "diagnosis/request_chains.h"
#include "synth/scenarios.h"
#include "tests/unit/request_db.h"
#include "requests/to_record.h"
#include "tests/unit/request_rows.h"
#include "tests/support/test_support.h"
#include "tests/unit/test_mcp_helpers.h"
#include "tracedb/chain_store.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using json = nlohmann::json;

namespace {

std::string demo(const std::string& scenario, uint64_t seed, test::TempDir& dir,
                 int64_t start_ns = 1'790'000'000'000'000'000) {
  const std::string path = dir.file(scenario + std::to_string(seed) + ".db");
  DemoOptions o;
  o.scenario = scenario;
  o.seed = seed;
  o.start_ns = start_ns;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  return path;
}

// One integer from a read-only connection.
int64_t q_int(const std::string& path, const std::string& sql) {
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto st = Statement::prepare(db->get(), sql);
  REQUIRE(st);
  REQUIRE(st->step() == SQLITE_ROW);
  return st->col_int(0);
}

json ask(const std::string& scenario, uint64_t seed, requests::Metric m, test::TempDir& dir) {
  auto db = open_read_only(demo(scenario, seed, dir));
  REQUIRE(db.ok());
  requests::RequestQuery q;
  q.metric = m;
  auto r = requests::request_latency_json(db->get(), q);
  REQUIRE(r);
  return (*r)["requests"];
}

}  // namespace

TEST_CASE("request scenarios: the planted cause leads the tail, with its culprit") {
  test::TempDir dir;
  size_t seen = 0;
  for (const ScenarioInfo& info : demo_scenarios()) {
    if (info.name.rfind("requests-", 0) != 0) continue;
    ++seen;
    for (uint64_t seed : {1, 7}) {
      const std::string& want = info.expected_request_cause;
      const auto metric = want == "queueing" ? requests::Metric::ttft : requests::Metric::itl;
      json d = ask(info.name, seed, metric, dir);
      CAPTURE(info.name);
      CAPTURE(seed);
      CAPTURE(d["tail"].dump());
      CHECK(d["count"].get<int>() >= 100);
      const json& causes = d["tail"]["causes"];
      if (want.empty()) {
        for (const auto& c : causes) CHECK(c["share_time"].get<double>() < 0.2);
        continue;
      }
      REQUIRE(!causes.empty());
      CHECK(causes[0]["cause"] == want);
      CHECK(causes[0]["share_time"].get<double>() >= 0.5);
      const json& k = causes[0]["culprit"];
      if (want == "cpu_contention") {
        CHECK(k["pid"] == info.expected_culprit_pid);
        CHECK(k["comm"] == info.expected_culprit);
      }
      if (want == "nccl_straggler") {
        CHECK(k["pid"] == info.expected_culprit_pid);
        CHECK(k["comm"] == info.expected_culprit);
        CHECK(k["rank"] == 1);
      }
      if (want == "prefill_interference") {
        CHECK(!k["requests"].empty());
        // Seen on the engine's forward passes: the long prefill's pass against ~14 ms decode passes.
        CHECK(k["basis"] == "forward_pass");
        CHECK(k["pass_ms"].get<double>() >= 250);
        CHECK(k["median_pass_ms"].get<double>() < 30);
      }
      if (want == "network") {
        CHECK(k["peer"] == "10.0.4.21:50114");
        CHECK(k["pid"] == 5300);
        CHECK(k["short_writes"].get<int>() >= 1);
        CHECK(k["retransmits"] == 0);
      }
      if (want == "queueing") CHECK(k["waiting_max"].get<double>() >= 5);
      if (want == "kv_cache_pressure") CHECK(k["preemptions"].get<double>() >= 1);
    }
  }
  CHECK(seen == 7);
}

TEST_CASE("request chains: severity from how slow the tail is and how much the cause explains") {
  using requests::request_chain_severity;
  CHECK(std::string(request_chain_severity(1000, 30, 0.9)) == "HIGH");
  CHECK(std::string(request_chain_severity(1000, 30, 0.4)) == "MEDIUM");
  CHECK(std::string(request_chain_severity(1000, 30, 0.1)) == "LOW");
  CHECK(std::string(request_chain_severity(45, 30, 0.9)) == "MEDIUM");  // 1.5x, 15 ms above
  CHECK(std::string(request_chain_severity(33, 20, 0.9)) == "MEDIUM");  // 1.65x but 13 ms: not HIGH
  CHECK(std::string(request_chain_severity(24, 20, 0.9)) == "LOW");     // a quiet server's jitter
  CHECK(std::string(request_chain_severity(3, 1, 1.0)) == "LOW");       // 3x of nothing
  CHECK(std::string(request_chain_severity(1000, 30, 0.9, 1)) == "MEDIUM");  // one slow request: an anecdote
  // A busy host's noise: the p99's four gaps (of 320) at 4x the median in two requests, most
  // of them one cause's: not HIGH.
  CHECK(std::string(request_chain_severity(46, 10, 0.58, 2)) == "MEDIUM");
  CHECK(std::string(request_chain_severity(1000, 30, 0.9, 3)) == "HIGH");
}

TEST_CASE("request chains: each request scenario's cause is a HIGH request chain naming the requests; quiet has none") {
  test::TempDir dir;
  for (const ScenarioInfo& info : demo_scenarios()) {
    if (info.name.rfind("requests-", 0) != 0) continue;
    CAPTURE(info.name);
    const std::string path = demo(info.name, 3, dir);
    auto db = open_read_only(path);
    REQUIRE(db.ok());
    const json chains = requests::request_chain_docs(db->get());
    CAPTURE(chains.dump());
    if (info.expected_request_cause.empty()) {
      for (const auto& c : chains) CHECK(c["severity"] != "HIGH");
      continue;
    }
    REQUIRE(!chains.empty());
    CHECK(chains[0]["level"] == "request");
    CHECK(chains[0]["severity"] == "HIGH");
    CHECK(chains[0]["cause"] == info.expected_request_cause);
    CHECK(!chains[0]["requests"].empty());
    CHECK(!chains[0]["culprit"]["comm"].get<std::string>().empty());
    CHECK(!chains[0]["recommendation"].get<std::string>().empty());
    if (info.expected_request_cause == "prefill_interference")
      CHECK(chains[0]["evidence"].back().get<std::string>().rfind("forward passes (", 0) == 0);
  }
}

TEST_CASE("explain: request-level chains first when the session served requests") {
  test::TempDir dir;
  auto r = test::run_causeway({"explain", "--db", demo("requests-queueing", 1, dir), "--json"});
  REQUIRE(r.exit_code == 0);
  json d = json::parse(r.out);
  REQUIRE(!d["chains"].empty());
  CHECK(d["chains"][0]["level"] == "request");
  CHECK(d["chains"][0]["cause"] == "queueing");
  auto text = test::run_causeway({"explain", "--db", demo("requests-queueing", 2, dir)});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("1. [HIGH] queueing: TTFT") != std::string::npos);
  CHECK(text.out.find("Requests:   burst-") != std::string::npos);
  // A training session has no request chains: explain reads as before.
  auto train = test::run_causeway({"explain", "--db", demo("incident", 1, dir), "--json"});
  REQUIRE(train.exit_code == 0);
  for (const auto& c : json::parse(train.out)["chains"]) CHECK(!c.contains("level"));
}

TEST_CASE("request chains are stored: stable ids, get_causal_chains returns them first, requests' causes point at them") {
  test::TempDir dir;
  const std::string path = demo("requests-queueing", 1, dir);
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  const int64_t sid = q_int(path, "SELECT max(id) FROM sessions");
  const std::string id = requests::request_chain_id(sid, 5300, requests::Metric::ttft, "queueing");
  CHECK(id == "s" + std::to_string(sid) + "-req-5300-ttft-queueing");
  // A row of the chains table, with the columns of a chain and the document explain shows.
  auto st = Statement::prepare(db->get(), "SELECT severity, cause, pid, culprit_pid, calls, doc FROM chains WHERE id = ?1");
  REQUIRE(st);
  st->bind(1, id);
  REQUIRE(st->step() == SQLITE_ROW);
  CHECK(st->col_text(0) == "HIGH");
  CHECK(st->col_text(1) == "queueing");
  CHECK(st->col_int(2) == 5300);  // the server whose requests waited
  CHECK(st->col_int(3) == 5300);  // queueing's culprit: the engine's server
  CHECK(st->col_int(4) >= 3);     // requests in the tail it explains
  const json doc = json::parse(st->col_text(5));
  CHECK(doc["level"] == "request");
  CHECK(doc["metric"] == "ttft");
  CHECK(!doc["requests"].empty());
  // The same demo (same seed) gives the same ids: the id names the session, server, metric and cause.
  test::TempDir other;
  const std::string again = demo("requests-queueing", 1, other);
  CHECK(q_int(again, "SELECT count(*) FROM chains WHERE id = '" + id + "'") == 1);

  // `causeway requests`: the tail's cause and each slow request's cause carry the chain's id;
  // E2E, which has no chains of its own, points at the TTFT chain of the cause.
  for (const char* metric : {"ttft", "e2e"}) {
    auto r = test::run_causeway({"requests", "--db", path, "--json", "--metric", metric});
    REQUIRE(r.exit_code == 0);
    const json d = json::parse(r.out)["requests"];
    CAPTURE(d["tail"].dump());
    bool tail_named = false;
    for (const auto& c : d["tail"]["causes"])
      if (c["cause"] == "queueing") tail_named = c["chain_id"] == id;
    CHECK(tail_named);
    CHECK(d["slowest"][0]["causes"][0]["cause"] == "queueing");
    CHECK(d["slowest"][0]["causes"][0]["chain_id"] == id);
  }
  // A cause with no stored chain has none.
  auto itl = test::run_causeway({"requests", "--db", path, "--json", "--metric", "itl", "--quantile", "0.5"});
  REQUIRE(itl.exit_code == 0);
  for (const auto& c : json::parse(itl.out)["requests"]["tail"]["causes"])
    if (q_int(path, "SELECT count(*) FROM chains WHERE id = '" + requests::request_chain_id(sid, 5300, requests::Metric::itl, c["cause"].get<std::string>()) + "'") == 0)
      CHECK(c["chain_id"].is_null());

  // MCP get_causal_chains: the request chain first, found by its cause too.
  auto s = test::make_mcp_server(path);
  json r = test::call_tool(s, "get_causal_chains", json::object())["result"];
  REQUIRE(r["isError"] == false);
  const json& chains = r["structuredContent"]["chains"];
  REQUIRE(!chains.empty());
  CHECK(chains[0]["id"] == id);
  CHECK(chains[0]["level"] == "request");
  CHECK(r["content"][0]["text"].get<std::string>().find("requests slowed: ") != std::string::npos);
  json by_cause = test::call_tool(s, "get_causal_chains", {{"cause", "queueing"}})["result"]["structuredContent"];
  CHECK(by_cause["chains"][0]["id"] == id);

  // A DB written before chains were per server: its one chain of the cause for all servers
  // ("s<session>-req-ttft-queueing") is the one pointed at.
  const std::string legacy = request_chain_id_prefix(sid) + "ttft-queueing";
  {
    auto w = open_for_write(again);
    REQUIRE(w);
    ChainRecord old;
    old.id = legacy;
    old.severity = "HIGH";
    old.cause = "queueing";
    old.summary = "written before chains were per server";
    old.doc = json{{"id", legacy}, {"level", "request"}}.dump();
    REQUIRE(replace_request_chains(w->get(), sid, std::vector<ChainRecord>{old}));
    close_writer_cleanly(*w);
  }
  auto old_db = test::run_causeway({"requests", "--db", again, "--json"});
  REQUIRE(old_db.exit_code == 0);
  const json od = json::parse(old_db.out)["requests"];
  CHECK(od["tail"]["causes"][0]["chain_id"] == legacy);
  CHECK(od["slowest"][0]["causes"][0]["chain_id"] == legacy);
}

TEST_CASE("request chains: each pass replaces the session's request chains, in the writer and after the fact") {
  test::TempDir dir;
  const std::string path = demo("requests-kv-cache", 1, dir);
  const int64_t sid = q_int(path, "SELECT max(id) FROM sessions");
  const int64_t stored = q_int(path, "SELECT count(*) FROM chains WHERE id LIKE 's%-req-%'");
  REQUIRE(stored >= 1);
  const int64_t call_level = q_int(path, "SELECT count(*) FROM chains WHERE id NOT LIKE 's%-req-%'");
  // A chain of an earlier pass that the tail no longer has is gone after the next pass; the
  // call-level chains are left alone.
  {
    auto w = open_for_write(path);
    REQUIRE(w);
    ChainRecord stale;
    stale.id = request_chain_id_prefix(sid) + "5300-itl-cpu_contention";
    stale.severity = "LOW";
    stale.cause = "cpu_contention";
    stale.summary = "from an earlier pass";
    stale.doc = "{}";
    REQUIRE(replace_request_chains(w->get(), sid, std::vector<ChainRecord>{stale}));
    close_writer_cleanly(*w);
  }
  CHECK(q_int(path, "SELECT count(*) FROM chains WHERE id LIKE 's%-req-%'") == 1);
  auto n = requests::store_request_chains(path, sid);
  REQUIRE(n);
  CHECK(static_cast<int64_t>(*n) == stored);
  CHECK(q_int(path, "SELECT count(*) FROM chains WHERE id LIKE 's%-req-%'") == stored);
  CHECK(q_int(path, "SELECT count(*) FROM chains WHERE id LIKE '%cpu_contention' AND summary = 'from an earlier pass'") == 0);
  CHECK(q_int(path, "SELECT count(*) FROM chains WHERE id NOT LIKE 's%-req-%'") == call_level);

  // The live path: the writer applies a RequestChainsRecord the same way.
  const std::string live = dir.file("live.db");
  {
    auto w = StoreWriter::open(live);
    REQUIRE(w);
    SessionInfo info;
    info.source_kind = "live";
    info.started_ns = 1'700'000'000'000'000'000;
    auto lsid = (*w)->begin_session(info);
    REQUIRE(lsid);
    auto chain = [&](const std::string& cause) {
      ChainRecord c;
      c.id = request_chain_id_prefix(*lsid) + "5300-ttft-" + cause;
      c.severity = "HIGH";
      c.cause = cause;
      c.summary = cause;
      c.doc = json{{"id", c.id}, {"level", "request"}}.dump();
      return c;
    };
    ChainRecord call_chain = chain("gpu_wait");
    call_chain.id = "s" + std::to_string(*lsid) + "-gpu_wait-1";
    (*w)->push_meta(call_chain);
    (*w)->push_meta(RequestChainsRecord{{chain("queueing"), chain("cpu_contention")}});
    (*w)->push_meta(RequestChainsRecord{{chain("queueing")}});
    REQUIRE((*w)->close(info.started_ns + 1'000'000'000));
  }
  CHECK(q_int(live, "SELECT count(*) FROM chains WHERE id LIKE 's%-req-%'") == 1);
  CHECK(q_int(live, "SELECT count(*) FROM chains WHERE cause = 'queueing'") == 1);
  CHECK(q_int(live, "SELECT count(*) FROM chains WHERE cause = 'gpu_wait'") == 1);
}

TEST_CASE("merge: the hosts' requests come along, and the merged session has its own request chains") {
  test::TempDir dir;
  // Two hosts' sessions (a host is one session: they start apart).
  const std::string a = demo("requests-queueing", 1, dir), b = demo("requests-queueing", 2, dir, 1'790'000'000'000'000'500);
  const std::string out = dir.file("merged.db");
  auto m = test::run_causeway({"merge", "-o", out, a, b, "--json"});
  REQUIRE_MESSAGE(m.exit_code == 0, m.err << m.out);
  const int64_t sid = q_int(out, "SELECT max(id) FROM sessions");
  CHECK(q_int(out, "SELECT count(*) FROM requests") == q_int(a, "SELECT count(*) FROM requests") + q_int(b, "SELECT count(*) FROM requests"));
  CHECK(q_int(out, "SELECT count(DISTINCT server_pid) FROM requests") == 2);  // each host's 5300, shifted apart
  CHECK(q_int(out, "SELECT count(*) FROM engines") == 2);
  auto r = test::run_causeway({"requests", "--db", out, "--json"});
  REQUIRE(r.exit_code == 0);
  const json d = json::parse(r.out)["requests"];
  CHECK(d["by"].size() == 2);
  CHECK(d["tail"]["causes"][0]["cause"] == "queueing");
  // Each host's server keeps its own chain; the tail's cause points at the one of the server
  // that lost the most to it.
  const uint32_t top = d["tail"]["causes"][0]["culprit"]["pid"].get<uint32_t>();
  CHECK(d["tail"]["causes"][0]["chain_id"] == requests::request_chain_id(sid, top, requests::Metric::ttft, "queueing"));
  auto e = test::run_causeway({"explain", "--db", out, "--json"});
  REQUIRE(e.exit_code == 0);
  const json chains = json::parse(e.out)["chains"];
  REQUIRE(!chains.empty());
  CHECK(chains[0]["level"] == "request");
  CHECK(chains[0]["cause"] == "queueing");
  std::set<int64_t> queueing_servers;
  for (const auto& c : chains)
    if (c.value("level", "") == "request" && c["cause"] == "queueing" && c["metric"] == "ttft") queueing_servers.insert(c["pid"].get<int64_t>());
  CHECK(queueing_servers.size() == 2);
}

namespace {

// Two asyncio-style API servers traced in one session (pids 100 and 200, each's event loop on
// its main thread), both busy on CPU while requests waited unread: 35 quick requests each,
// and five that waited `wait_ms` (server 100 at 5 s, server 200 at 7 s).
void two_busy_servers(StoreWriter& w) {
  using namespace requests;
  for (const uint32_t pid : {100u, 200u}) {
    w.push_meta(ProcessRecord{.pid = pid, .ppid = 1, .comm = "api-" + std::to_string(pid)});
    w.push_meta(ThreadRecord{.tid = pid, .pid = pid, .comm = "loop-" + std::to_string(pid)});
    const int64_t busy_ms = pid == 100 ? 5000 : 7000, wait_ms = pid == 100 ? 30 : 40;
    for (int i = 0; i < 35; ++i) {
      Request r = streamed("q" + std::to_string(pid) + "-" + std::to_string(i), i * 100 + (pid == 200 ? 50 : 0), 5, 3, 10);
      r.pid = pid;
      r.read_end_ns = r.end_ns + 200'000;
      w.push_meta(to_record(r));
    }
    for (int i = 0; i < 5; ++i) {
      Request r = streamed("b" + std::to_string(pid) + "-" + std::to_string(i), busy_ms + i, wait_ms + 5, 3, 10);
      r.pid = pid;
      r.read_end_ns = r.end_ns + wait_ms * kMs;
      w.push_meta(to_record(r));
    }
    // The loop thread runs a CPU-bound handler throughout the waits, then sleeps.
    for (const auto& [ms, prev, state, next] : {std::tuple{busy_ms - 10, 0u, int64_t{0}, pid}, std::tuple{busy_ms + 60, pid, int64_t{1}, 0u}}) {
      SwitchRecord s;
      s.ts_ns = kT0 + ms * kMs;
      s.cpu = pid == 100 ? 0 : 1;
      s.prev_tid = s.prev_pid = prev;
      s.prev_state = state;
      s.next_tid = s.next_pid = next;
      w.push_wait(s);
    }
  }
}

}  // namespace

TEST_CASE("request chains per server: two servers traced in one session keep their own chains, and causes point at their server's") {
  using namespace requests;
  Db db(two_busy_servers);
  const int64_t sid = q_int(db.path, "SELECT max(id) FROM sessions");
  auto n = store_request_chains(db.path, sid);
  REQUIRE(n);
  const std::string a = request_chain_id(sid, 100, Metric::ttft, "api_server_busy");
  const std::string b = request_chain_id(sid, 200, Metric::ttft, "api_server_busy");
  CHECK(a == "s" + std::to_string(sid) + "-req-100-ttft-api_server_busy");
  // One chain of the cause per server, each of its own server's requests and thread.
  for (const auto& [id, pid] : {std::pair{a, 100}, std::pair{b, 200}}) {
    CAPTURE(id);
    CHECK(q_int(db.path, "SELECT count(*) FROM chains WHERE id = '" + id + "' AND pid = " + std::to_string(pid) +
                             " AND culprit_pid = " + std::to_string(pid) + " AND calls = 5") == 1);
    auto h = open_read_only(db.path);
    REQUIRE(h);
    auto st = Statement::prepare(h->get(), "SELECT doc FROM chains WHERE id = ?1");
    REQUIRE(st);
    st->bind(1, id);
    REQUIRE(st->step() == SQLITE_ROW);
    const json doc = json::parse(st->col_text(0));
    for (const auto& r : doc["requests"]) CHECK(r.get<std::string>().rfind("b" + std::to_string(pid) + "-", 0) == 0);
  }

  // `requests` over both: the tail's cause points at the chain of the server that lost the
  // most to it (200: 40 ms waits), each slow request's at its own server's.
  const json all = db.ask(Metric::ttft, 0.9)["requests"];
  CAPTURE(all["tail"].dump());
  const json* busy = cause(all["tail"], "api_server_busy");
  REQUIRE(busy != nullptr);
  CHECK((*busy)["chain_id"] == b);
  size_t pointed = 0;
  for (const auto& s : all["slowest"])
    for (const auto& c : s["causes"])
      if (c["cause"] == "api_server_busy") {
        CHECK(c["chain_id"] == (s["server_pid"] == 100 ? a : b));
        ++pointed;
      }
  CHECK(pointed >= 8);
  // Asked for one server, its own chain.
  auto h = open_read_only(db.path);
  REQUIRE(h);
  RequestQuery q;
  q.metric = Metric::ttft;
  q.quantile = 0.9;
  q.pid = 100;
  auto one = request_latency_json(h->get(), q);
  REQUIRE(one);
  const json* mine = cause((*one)["requests"]["tail"], "api_server_busy");
  REQUIRE(mine != nullptr);
  CHECK((*mine)["chain_id"] == a);

  // explain shows both, each naming its server.
  auto e = test::run_causeway({"explain", "--db", db.path, "--json"});
  REQUIRE(e.exit_code == 0);
  const json explained = json::parse(e.out);
  std::set<std::string> shown;
  for (const auto& c : explained["chains"]) shown.insert(c["id"].get<std::string>());
  CHECK(shown.count(a) == 1);
  CHECK(shown.count(b) == 1);
}
