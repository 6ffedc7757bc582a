// `causeway report` (exporters/report*.cpp) on real demo DBs: the page is self-contained (no
// URL, no script, a CSP that forbids fetches), has one section per chain and one histogram per
// op, draws the incident's culprit in its swimlanes, keeps hostile trace strings as text, and
// renders the inference-requests section from a document of the documented shape.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "diagnosis/chains.h"
#include "diagnosis/correlator.h"
#include "diagnosis/stats.h"
#include "exporters/report.h"
#include "exporters/report_html.h"
#include "exporters/report_requests.h"
#include "diagnosis/request_chains.h"
#include "synth/scenarios.h"
#include "tests/support/report_checks.h"
#include "tests/support/test_support.h"
#include "tracedb/merge.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using causeway::test::TempDir;
using causeway::test::check_self_contained;
using causeway::test::count_of;
using nlohmann::json;

namespace {

struct Demo {
  TempDir dir;
  std::string db;
  explicit Demo(const std::string& scenario) : db(dir.file("demo.db")) {
    DemoOptions o;
    o.scenario = scenario;
    auto r = run_demo(db, o);
    REQUIRE(r.ok());
    REQUIRE(diagnose_and_store(db, r->session_id).ok());
    session_id = r->session_id;
  }
  int64_t session_id = 0;
  std::string report(ReportSummary* out = nullptr, RequestsProvider requests = {}) {
    ReportOptions o;
    o.db_path = db;
    o.out_path = dir.file("r.html");
    o.requests = std::move(requests);
    auto s = write_report(o);
    if (!s) FAIL(s.error().message);
    if (out) *out = *s;
    return test::read_file(o.out_path);
  }
};

}  // namespace

TEST_CASE("every demo scenario's report: self-contained, a section per chain, a histogram per op") {
  for (const ScenarioInfo& sc : demo_scenarios()) {
    CAPTURE(sc.name);
    Demo d(sc.name);
    ReportSummary s;
    const std::string html = d.report(&s);
    check_self_contained(html);
    auto db = open_read_only(d.db);
    REQUIRE(db.ok());
    auto chains = load_chains(db->get(), ChainQuery{.limit = 1000});
    REQUIRE(chains.ok());
    const size_t want_chains = std::min<size_t>((*chains)["chains"].size(), 10);
    CHECK(s.chains == want_chains);
    CHECK(count_of(html, "<section class=\"chain ") == want_chains);
    auto stats = compute_stats(db->get(), StatsQuery{});
    REQUIRE(stats.ok());
    const size_t want_ops = std::min<size_t>(stats->ops.size(), 24);
    CHECK(s.histograms == want_ops);
    CHECK(count_of(html, "<figure class=\"op\"") == want_ops);
    CHECK(html.find("<h1>causeway report</h1>") != std::string::npos);
    if (!sc.expected_cause.empty()) CHECK(html.find("data-cause=\"" + sc.expected_cause + "\"") != std::string::npos);
  }
}

TEST_CASE("incident: the swimlanes show tar preempting python3 on CPU 3") {
  Demo d("incident");
  const std::string html = d.report();
  auto first = html.find("<section class=\"chain sev-HIGH\" id=\"chain-1\" data-cause=\"cpu_contention\"");
  REQUIRE(first != std::string::npos);
  const std::string chain = html.substr(first, html.find("</section>", first) - first);
  CHECK(chain.find("class=\"culprit\">tar (pid") != std::string::npos);
  auto lane = [&](const std::string& kind) {
    auto p = chain.find("<g class=\"lane\" data-lane=\"" + kind + "\">");
    REQUIRE(p != std::string::npos);
    return chain.substr(p, chain.find("</g>", p) - p);
  };
  const std::string cpu = lane("cpu"), victim = lane("victim");
  CHECK(cpu.find(">CPU 3</text>") != std::string::npos);
  CHECK(cpu.find("class=\"culprit\"><title>tar (pid") != std::string::npos);
  // Named inside its stretch, readable without hovering.
  CHECK(std::regex_search(cpu, std::regex(R"(>tar( \(pid \d+\))?</text>)")));
  CHECK(victim.find(">python3 tid") != std::string::npos);
  CHECK(victim.find("class=\"runnable\"><title>preempted by tar (pid") != std::string::npos);
  CHECK(lane("calls").find("class=\"slow_call\"") != std::string::npos);
}

TEST_CASE("hostile comm and op names stay text") {
  Demo d("incident");
  const std::string evil = "<script>alert(1)</script></svg><img src=x onerror=alert(2)>\xE2\x80\xAE\x1b[31m\x07";
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(d.db.c_str(), &raw) == SQLITE_OK);
    auto st = Statement::prepare(raw, "UPDATE processes SET comm = ?1");
    REQUIRE(st.ok());
    st->bind(1, evil);
    CHECK(st->step() == SQLITE_DONE);
    auto th = Statement::prepare(raw, "UPDATE threads SET comm = ?1");
    REQUIRE(th.ok());
    th->bind(1, evil);
    CHECK(th->step() == SQLITE_DONE);
    auto op = Statement::prepare(raw, "UPDATE ops SET name = ?1 || name");
    REQUIRE(op.ok());
    op->bind(1, evil);
    CHECK(op->step() == SQLITE_DONE);
    // The chain documents carry comm and op too (the correlator copied them).
    auto ch = Statement::prepare(raw,
                                 "UPDATE chains SET doc = json_set(doc, '$.comm', ?1, '$.op', ?1, '$.culprit.comm', ?1, "
                                 "'$.summary', ?1, '$.stack[0]', ?1)");
    REQUIRE(ch.ok());
    ch->bind(1, evil);
    CHECK(ch->step() == SQLITE_DONE);
    sqlite3_close(raw);
  }
  const std::string html = d.report();
  check_self_contained(html);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;") != std::string::npos);
  CHECK(html.find("\xE2\x80\xAE") == std::string::npos);  // bidi override gone
  for (char ch : html) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 && ch != '\n') FAIL("control character " << int(u) << " in the page");
  }
}

TEST_CASE("requests section from a document of the documented `requests --json` shape") {
  const json doc = json::parse(R"({"requests": {"count": 1200, "streamed": 1180, "errors": 3,
    "window": {"from_ns": 0, "to_ns": 0},
    "ttft_ms": {"p50": 42, "p90": 90, "p99": 480, "max": 1900},
    "itl_ms": {"p50": 18, "p90": 25, "p99": 70, "max": 300},
    "e2e_ms": {"p50": 900, "p90": 1500, "p99": 4000, "max": 9000},
    "by": [{"server_pid": 4821, "comm": "vllm<b>", "path": "/v1/completions", "tenant": "team-a", "count": 1200,
            "ttft_ms": {"p50": 42, "p90": 90, "p99": 480, "max": 1900}, "itl_ms": {"p50": 18, "p90": 25, "p99": 70, "max": 300},
            "e2e_ms": {"p50": 900, "p90": 1500, "p99": 4000, "max": 9000}}],
    "tail": {"metric": "ttft", "quantile": 0.99, "unexplained_share": 0.05,
             "causes": [{"cause": "cpu_contention", "share_time": 0.8, "requests": 9,
                         "culprit": {"pid": 991, "comm": "tar", "off_cpu_share": 0.81}, "chain_id": "c1"},
                        {"cause": "prefill_interference", "share_time": 0.15, "requests": 3,
                         "culprit": {"requests": ["req-77"], "pid": 4821}, "chain_id": "c2"}]},
    "slowest": [{"request_id": "req-1</td><script>", "method": "POST", "path": "/v1/completions", "tenant": "team-a",
                 "start_ns": 0, "ttft_ms": 1900, "itl_max_ms": 300, "e2e_ms": 9000, "events": 120, "prompt_bytes": 4000,
                 "status": 200, "server_pid": 4821,
                 "causes": [{"cause": "cpu_contention", "lost_ms": 1500, "culprit": {"pid": 991, "comm": "tar"}, "chain_id": "c1"}]}]},
   "engines": [{"pid": 4821, "engine": "vllm", "url": "http://127.0.0.1:8000/metrics", "samples": 60}]})");
  const std::string html = render_requests_section(doc);
  CHECK(html.find("<section class=\"requests\" id=\"requests\">") == 0);
  CHECK(html.find("1200 requests, 1180 streamed, 3 errors") != std::string::npos);
  for (const char* m : {"ttft", "itl", "e2e"}) CHECK(html.find(std::string("data-metric=\"") + m + "\"") != std::string::npos);
  // The TTFT tail band is split by cause; the table names the culprits.
  CHECK(html.find("class=\"c0\"><title>cpu_contention 80% of the tail") != std::string::npos);
  CHECK(html.find("tar (pid 991), 81% of the stolen CPU time") != std::string::npos);
  CHECK(html.find("long requests req-77") != std::string::npos);
  CHECK(html.find("req-1&lt;/td&gt;&lt;script&gt;") != std::string::npos);
  CHECK(html.find("vllm&lt;b&gt;") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("127.0.0.1") == std::string::npos);  // the engine's URL is not a link in the page
  CHECK(count_of(html, "<tr") == 1 + 3 + 1 + 1 + 1 + 1);  // tail: head + 2 + unexplained; by: head + 1; slowest: head + 1
  // A document of another shape says so instead of failing.
  CHECK(render_requests_section(json::object()).find("no <code>requests</code> object") != std::string::npos);
}

TEST_CASE("request latency: histograms from per-request values, the analysed tail coloured by cause") {
  const json r = json::parse(R"({"ttft_ms": {"p50": 40, "p90": 44, "p99": 47, "max": 49},
    "itl_ms": {"p50": 18, "p90": 25, "p99": 70, "max": 300}, "e2e_ms": {"p50": 900, "p90": 1500, "p99": 4000, "max": 9000},
    "tail": {"metric": "ttft", "quantile": 0.99, "threshold_ms": 47,
             "causes": [{"cause": "cpu_contention", "share_time": 0.8, "requests": 9}]}})");
  RequestSamples s;
  for (int i = 0; i < 200; ++i) s.ttft_ms.push_back(40 + i % 10);
  s.ttft_ms.push_back(49);
  for (int i = 0; i < 500; ++i) s.itl_ms.push_back(18 + i % 60);
  for (int i = 0; i < 200; ++i) s.e2e_ms.push_back(900 + 40 * i);
  const std::string html = render_request_latency(r, s);
  CHECK(html.find("<figure class=\"requests\">") == 0);
  CHECK(count_of(html, "class=\"bar\"") >= 10);  // bins of the three histograms
  CHECK(html.find("class=\"c0\"><title>cpu_contention 80% of the tail&#39;s time — TTFT") != std::string::npos);
  CHECK(html.find("class=\"tail\"") != std::string::npos);  // the other metrics' tails, not analysed
  CHECK(html.find("gaps") != std::string::npos);
}

TEST_CASE("request latency: marker labels close together go to separate rows, none overlapping") {
  // p90, p99 and max of TTFT 44, 47, 49 ms sit a few pixels apart on a decades-wide axis.
  const std::vector<std::pair<double, size_t>> labels = {{500, 11}, {520, 11}, {530, 11}, {536, 11}, {1150, 10}};
  const auto slots = place_labels(labels, 1160);
  REQUIRE(slots.size() == labels.size());
  for (size_t i = 0; i < slots.size(); ++i)
    for (size_t j = i + 1; j < slots.size(); ++j)
      if (slots[i].row == slots[j].row) CHECK((slots[i].x1 <= slots[j].x0 || slots[j].x1 <= slots[i].x0));
  CHECK(slots[0].row == 0);
  CHECK(slots[1].row == 1);
  CHECK(slots[3].row == 3);
  CHECK(slots[4].end_anchor);  // at the right edge it reads leftwards, inside the picture
  CHECK(slots[4].x1 <= 1160);
}

TEST_CASE("the report includes the requests section only when the provider returns a document") {
  Demo d("incident");
  ReportSummary s;
  std::string html = d.report(&s, [](sqlite3*, const RequestsScope&) -> Result<std::optional<json>> {
    return std::optional<json>{json{{"requests", {{"count", 7}, {"streamed", 7}, {"errors", 0}}}}};
  });
  CHECK(s.requests);
  CHECK(html.find("id=\"requests\"") != std::string::npos);
  html = d.report(&s, [](sqlite3*, const RequestsScope&) -> Result<std::optional<json>> { return std::optional<json>{}; });
  CHECK_FALSE(s.requests);
  CHECK(html.find("id=\"requests\"") == std::string::npos);
}

TEST_CASE("a merged session: one row per host, the straggler's host highlighted") {
  Demo straggler("nccl-straggler"), incident("incident");
  TempDir dir;
  const std::string merged = dir.file("job.db");
  auto m = merge_trace_dbs(merged, {straggler.db, incident.db});
  REQUIRE_MESSAGE(m, (m ? std::string() : m.error().message));
  REQUIRE(diagnose_and_store(merged, m->session_id).ok());
  ReportOptions o;
  o.db_path = merged;
  o.out_path = dir.file("r.html");
  auto s = write_report(o);
  REQUIRE_MESSAGE(s, (s ? std::string() : s.error().message));
  CHECK(s->hosts == 2);
  const std::string html = test::read_file(o.out_path);
  check_self_contained(html);
  auto at = html.find("<section class=\"hosts\" id=\"hosts\">");
  REQUIRE(at != std::string::npos);
  const std::string hosts = html.substr(at, html.find("</section>", at) - at);
  CHECK(count_of(hosts, "<tr") == 3);  // head + 2 hosts
  CHECK(count_of(hosts, "<tr class=\"straggler\">") == 1);
  // The highlighted host is the one the nccl_straggler chain's culprit ran on.
  auto db = open_read_only(merged);
  REQUIRE(db.ok());
  auto st = Statement::prepare(db->get(),
                               "SELECT json_extract(doc, '$.culprit.host') FROM chains WHERE cause = 'nccl_straggler' LIMIT 1");
  REQUIRE(st.ok());
  REQUIRE(st->step() == SQLITE_ROW);
  CHECK(hosts.find("<tr class=\"straggler\"><td>" + html_escape(st->col_text(0)) + "</td>") != std::string::npos);
}

// Task of docs/REPORT.md "Request chains": a request-level chain is a chain section, drawn
// first (as `explain` lists it), naming the requests it slowed, with one lane per request and
// one for where its culprit ran.
TEST_CASE("request chains are chain sections: first, their requests, a lane per request and the culprit's") {
  for (const char* scenario : {"requests-queueing", "requests-tp-straggler"}) {
    CAPTURE(scenario);
    Demo d(scenario);
    // The diagnosis replaced the demo's chains with the call-level ones; `causeway demo`
    // stores the request chains after it, as here.
    auto stored = requests::store_request_chains(d.db, d.session_id);
    REQUIRE_MESSAGE(stored, (stored ? std::string() : stored.error().message));
    const std::string html = d.report();
    check_self_contained(html);
    auto db = open_read_only(d.db);
    REQUIRE(db.ok());
    auto loaded = load_chains(db->get(), ChainQuery{.limit = 1000});
    REQUIRE(loaded.ok());
    json chains = (*loaded)["chains"];
    rank_chains(chains);
    REQUIRE(!chains.empty());
    const json& first = chains[0];
    REQUIRE(first["level"] == "request");
    const size_t at = html.find("<section class=\"chain ");
    REQUIRE(at != std::string::npos);
    const std::string section = html.substr(at, html.find("</section>", at) - at);
    CHECK(section.find("id=\"chain-1\" data-cause=\"" + first["cause"].get<std::string>() + "\"") != std::string::npos);
    CHECK(section.find("<dt>Requests</dt>") != std::string::npos);
    // A lane for the request it slowed most (shaded), one per other slowed request drawn there,
    // each named by one of the chain's ids, and the culprit's lane.
    REQUIRE(!first["requests"].empty());
    CHECK(section.find(">req " + first["requests"][0].get<std::string>() + "</text>") != std::string::npos);
    CHECK(section.find("req " + first["requests"][0].get<std::string>() + ", slowed most") != std::string::npos);
    const size_t lanes = count_of(section, "data-lane=\"request\"");
    CHECK(lanes >= 1);
    size_t named = 0;
    for (const auto& id : first["requests"]) named += section.find(">req " + id.get<std::string>() + "</text>") != std::string::npos;
    CHECK(named == lanes);  // no lane for a request the chain does not name
    CHECK(count_of(section, "data-lane=\"culprit\"") == 1);
    CHECK(section.find("waiting_token") != std::string::npos);
    // The late tensor-parallel rank's GPU calls (its all-reduces) beside the requests.
    if (std::string(scenario) == "requests-tp-straggler") CHECK(count_of(section, "data-lane=\"calls\"") == 1);
    // Its culprit ran in the drawing: a red stretch, not "not on a CPU".
    CHECK(section.find("class=\"culprit\"") != std::string::npos);
  }
}

TEST_CASE("html_escape") {
  CHECK(html_escape("<a href='x'>&\"</a>") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  CHECK(html_text("a\xE2\x80\xAE" "b\x1b") == "ab");
}
