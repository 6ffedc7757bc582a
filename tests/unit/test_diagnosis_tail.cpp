// The tail breakdown (diagnosis/tail_breakdown.h) on real demo DBs: the correlator's claims land
// in call_causes, and the slowest calls of an op are explained by the cause that was planted —
// cpu_contention for the incident's stream syncs — while a healthy job's tail stays
// unexplained. Also the CLI (`explain --tail --json`) and bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diagnosis/tail_breakdown.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using causeway::test::TempDir;
using json = nlohmann::json;

namespace {

std::string demo(TempDir& dir, const std::string& scenario) {
  const std::string path = dir.file(scenario + ".db");
  DemoOptions o;
  o.scenario = scenario;
  o.seed = 1;
  o.start_ns = 1'790'000'000'000'000'000;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  return path;
}

int64_t count_rows(sqlite3* db, const std::string& sql) {
  auto st = Statement::prepare(db, sql);
  REQUIRE(st.ok());
  REQUIRE(st->step() == SQLITE_ROW);
  return st->col_int(0);
}

}  // namespace

TEST_CASE("the incident's p99 stream syncs are explained by cpu_contention; the claims are in call_causes") {
  TempDir dir;
  auto db = open_read_only(demo(dir, "incident"));
  REQUIRE(db.ok());
  // Every claim names a cause and a chain; the cpu_contention chain is among the stored ones.
  CHECK(count_rows(db->get(), "SELECT count(*) FROM call_causes") > 100);
  CHECK(count_rows(db->get(), "SELECT count(*) FROM call_causes WHERE cause = '' OR chain_id = ''") == 0);
  CHECK(count_rows(db->get(), "SELECT count(*) FROM call_causes c JOIN chains h ON h.id = c.chain_id "
                              "WHERE h.cause = 'cpu_contention'") > 100);

  TailQuery q;
  q.op = "cudaStreamSynchronize";
  auto r = tail_breakdown(db->get(), q);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  REQUIRE(r->ops.size() == 1);
  const TailOp& t = r->ops.front();
  CHECK(t.pid == 4821);
  CHECK(t.tail_calls >= t.calls / 100);
  CHECK(t.tail_calls <= t.calls / 100 + t.calls / 50);  // histogram buckets: a little over 1%
  REQUIRE(!t.causes.empty());
  CHECK(t.causes.front().cause == "cpu_contention");
  const double call_share = static_cast<double>(t.causes.front().calls) / static_cast<double>(t.tail_calls);
  CHECK(call_share > 0.9);
  CHECK(t.causes.front().time_ns / t.tail_ns > 0.9);
  CHECK(t.unexplained_calls + t.causes.front().calls <= t.tail_calls);
  CHECK(t.causes.front().chain_ids.front() == "s1-cpu_contention-4821-cudaStreamSynchronize");

  // p99.9 is a subset of p99: fewer calls, the same cause.
  q.quantile = 0.999;
  auto deep = tail_breakdown(db->get(), q);
  REQUIRE(deep.ok());
  REQUIRE(deep->ops.size() == 1);
  CHECK(deep->ops.front().tail_calls < t.tail_calls);
  CHECK(deep->ops.front().threshold_ns >= t.threshold_ns);
  REQUIRE(!deep->ops.front().causes.empty());
  CHECK(deep->ops.front().causes.front().cause == "cpu_contention");

  json j = tail_to_json(*r);
  CHECK(j["ops"][0]["causes"][0]["cause"] == "cpu_contention");
  CHECK(j["ops"][0]["causes"][0]["call_share"].get<double>() > 0.9);
  CHECK(j["ops"][0].contains("unexplained"));
  CHECK(tail_to_text(*r).find("cpu_contention:") != std::string::npos);
}

TEST_CASE("a healthy job's tail has no cause; every op is listed when none is named") {
  TempDir dir;
  auto db = open_read_only(demo(dir, "quiet"));
  REQUIRE(db.ok());
  auto r = tail_breakdown(db->get(), TailQuery{});
  REQUIRE(r.ok());
  REQUIRE(r->ops.size() >= 3);  // memcpy, launches, syncs
  for (size_t i = 1; i < r->ops.size(); ++i) CHECK(r->ops[i - 1].tail_ns >= r->ops[i].tail_ns);
  for (const TailOp& t : r->ops) {
    INFO(t.op);
    uint64_t claimed = 0;
    for (const TailCause& c : t.causes) claimed += c.calls;
    CHECK(claimed * 10 <= t.tail_calls);  // at most stray noise preemptions
    CHECK(t.unexplained_calls + claimed == t.tail_calls);
  }
}

TEST_CASE("tail breakdown refuses a quantile outside (0, 1) and an unknown op gives no ops") {
  TempDir dir;
  auto db = open_read_only(demo(dir, "quiet"));
  REQUIRE(db.ok());
  TailQuery q;
  q.quantile = 1.5;
  auto bad = tail_breakdown(db->get(), q);
  REQUIRE(!bad.ok());
  CHECK(bad.error().code == "invalid_argument");
  q.quantile = 0.99;
  q.op = "cudaNoSuchCall";
  auto none = tail_breakdown(db->get(), q);
  REQUIRE(none.ok());
  CHECK(none->ops.empty());
  CHECK(tail_to_text(*none).find("no CUDA/NCCL op") != std::string::npos);
}

TEST_CASE("causeway explain --tail --json prints the breakdown as one JSON document") {
  TempDir dir;
  const std::string path = demo(dir, "incident");
  auto out = test::run_causeway({"explain", "--db", path, "--tail", "--op", "cudaStreamSynchronize", "--json"});
  REQUIRE(out.exit_code == 0);
  json j = json::parse(out.out);
  REQUIRE(j["ops"].size() == 1);
  CHECK(j["ops"][0]["op"] == "cudaStreamSynchronize");
  CHECK(j["ops"][0]["causes"][0]["cause"] == "cpu_contention");
  auto text = test::run_causeway({"explain", "--db", path, "--tail", "--quantile", "0.999"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("p99.9") != std::string::npos);
  auto bad = test::run_causeway({"explain", "--db", path, "--tail", "--quantile", "2"});
  CHECK(bad.exit_code == 2);
}
