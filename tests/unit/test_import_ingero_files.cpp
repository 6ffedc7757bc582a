// Import of the real ingero traces in ../shared/data/ingero: exact per-op counts against the
// source file (computed here with SQL on the source), stats over the imported session, and
// explain runs over it. Skipped (exit 77) where the data folder is not checked out beside
// the source tree.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "importers/ingero_ops.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using causeway::test::TempDir;
using nlohmann::json;

namespace {

std::filesystem::path data_dir() { return std::filesystem::path(test::source_dir()) / ".." / "shared" / "data" / "ingero"; }

std::vector<std::string> ingero_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir(), ec))
    if (e.path().extension() == ".db") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

DbHandle open_source(const std::string& path) {
  sqlite3* raw = nullptr;
  std::string uri = "file:" + path + "?immutable=1";
  int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  DbHandle db(raw);
  REQUIRE(rc == SQLITE_OK);
  return db;
}

struct SourceOp {
  std::string source, op;
  int64_t count;
};

std::vector<SourceOp> source_counts(sqlite3* db) {
  auto st = Statement::prepare(db,
                               "SELECT coalesce(s.name, 'src' || e.source), coalesce(o.name, coalesce(s.name, 'src' || e.source) "
                               "|| '_op' || e.op), count(*) FROM events e LEFT JOIN sources s ON s.id = e.source "
                               "LEFT JOIN ops o ON o.source_id = e.source AND o.op_id = e.op GROUP BY e.source, e.op");
  REQUIRE(st.ok());
  std::vector<SourceOp> out;
  while (st->step() == SQLITE_ROW) out.push_back({st->col_text(0), st->col_text(1), st->col_int(2)});
  return out;
}

int64_t imported_count(sqlite3* db, int64_t session, const OpMapping& m) {
  // block_read / block_write share our block_rq, told apart by a3 (is_write).
  bool by_write = m.args == ArgPlan::block;
  auto st = Statement::prepare(db, std::string("SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id "
                                               "WHERE e.session_id = ?1 AND o.source = ?2 AND o.name = ?3") +
                                       (by_write ? " AND e.a3 = ?4" : ""));
  REQUIRE(st.ok());
  st->bind(1, session);
  st->bind(2, m.source);
  st->bind(3, m.name);
  if (by_write) st->bind(4, m.is_write);
  REQUIRE(st->step() == SQLITE_ROW);
  return st->col_int(0);
}

// Exact nearest-rank percentile of an op's durations in the source file.
int64_t source_percentile(sqlite3* db, const std::string& op, double q) {
  auto st = Statement::prepare(db, "SELECT e.duration FROM events e JOIN ops o ON o.source_id = e.source AND "
                                   "o.op_id = e.op WHERE o.name = ? ORDER BY e.duration");
  REQUIRE(st.ok());
  st->bind(1, op);
  std::vector<int64_t> v;
  while (st->step() == SQLITE_ROW) v.push_back(st->col_int(0));
  REQUIRE(!v.empty());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

}  // namespace

namespace causeway::test {
std::string missing_requirement() {
  if (ingero_files().empty())
    return "no ingero traces at " + data_dir().string() + " (the shared data folder beside the source tree)";
  return "";
}
}  // namespace causeway::test

TEST_CASE("every ingero file imports with exact per-op counts, then stats and explain work") {
  for (const std::string& file : ingero_files()) {
    CAPTURE(file);
    TempDir dir;
    const std::string db = dir.file("imported.db");
    const auto before = std::filesystem::last_write_time(file);
    auto r = test::run_causeway({"import", "ingero", file, "--db", db, "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json summary = json::parse(r.out);
    const int64_t session = summary["session_id"].get<int64_t>();
    CHECK(std::filesystem::last_write_time(file) == before);  // the source is never written

    DbHandle src = open_source(file);
    auto ours = open_read_only(db);
    REQUIRE(ours.ok());
    int64_t total = 0;
    for (const SourceOp& s : source_counts(src.get())) {
      CAPTURE(s.source);
      CAPTURE(s.op);
      OpMapping m = map_ingero_op(s.source, s.op);
      CHECK(imported_count(ours->get(), session, m) == s.count);
      CHECK(summary["per_op"][s.source + "/" + s.op].get<int64_t>() == s.count);
      total += s.count;
    }
    auto n = query_int(ours->get(), "SELECT count(*) FROM events WHERE session_id = " + std::to_string(session));
    REQUIRE(n.ok());
    CHECK(n->value_or(-1) == total);
    auto kind = query_int(ours->get(), "SELECT count(*) FROM sessions WHERE source_kind = 'import' AND id = " +
                                           std::to_string(session));
    CHECK(kind->value_or(0) == 1);

    auto stats = test::run_causeway({"stats", "--db", db, "--json"});
    INFO(stats.err);
    CHECK(stats.exit_code == 0);
    auto explain = test::run_causeway({"explain", "--db", db, "--json"});
    INFO(explain.err);
    CHECK(explain.exit_code == 0);
    CHECK(json::parse(explain.out, nullptr, false).contains("chains"));
  }
}

TEST_CASE("empty_cache trace: cudaFree p50/p99 from our stats match the source's exact values") {
  const std::string file = (data_dir() / "pytorch-173382-empty-cache.db").string();
  if (!std::filesystem::exists(file)) return;
  TempDir dir;
  const std::string db = dir.file("ec.db");
  REQUIRE(test::run_causeway({"import", "ingero", file, "--db", db, "--quiet", "--no-diagnose"}).exit_code == 0);
  auto stats = test::run_causeway({"stats", "--db", db, "--json", "--op", "cudaFree"});
  REQUIRE(stats.exit_code == 0);
  json j = json::parse(stats.out);
  REQUIRE(j["ops"].size() == 1);
  const json& op = j["ops"][0];
  CHECK(op["count"].get<int64_t>() == 40);
  DbHandle src = open_source(file);
  const double p50 = static_cast<double>(source_percentile(src.get(), "cudaFree", 0.50)) / 1000.0;
  const double p99 = static_cast<double>(source_percentile(src.get(), "cudaFree", 0.99)) / 1000.0;
  // The published finding: p99 = 1.9 ms, 4.6x the median.
  CHECK(p99 == doctest::Approx(1905).epsilon(0.01));
  CHECK(p99 / p50 == doctest::Approx(4.6).epsilon(0.02));
  CHECK(op["p50_us"].get<double>() == doctest::Approx(p50).epsilon(0.01));
  CHECK(op["p99_us"].get<double>() == doctest::Approx(p99).epsilon(0.01));

  // docs/IMPORT.md's comparison rests on this: the file's own sched_switch records cover the
  // calling thread (83 off-CPU intervals), yet none overlaps a cudaFree or cudaMemcpyAsync
  // slower than 500 us — the thread was on CPU for the whole tail.
  auto ours = open_read_only(db);
  REQUIRE(ours.ok());
  auto overlap = query_int(ours->get(),
                           "SELECT count(*) FROM events c JOIN ops oc ON oc.id = c.op_id JOIN events f ON f.tid = c.tid "
                           "JOIN ops of ON of.id = f.op_id WHERE oc.name IN ('cudaFree', 'cudaMemcpyAsync') "
                           "AND c.dur_ns > 500000 AND of.name = 'sched_switch' AND f.ts_ns < c.ts_ns + c.dur_ns "
                           "AND f.ts_ns + f.dur_ns > c.ts_ns");
  REQUIRE(overlap.ok());
  CHECK(overlap->value_or(-1) == 0);
  auto intervals = query_int(ours->get(), "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id "
                                          "WHERE o.name = 'sched_switch' AND e.tid = 30581");
  CHECK(intervals->value_or(0) == 83);
}

// The DataLoader-starvation investigation (pytorch/pytorch#154318): its main thread spends
// 99% of 50 s on-CPU between CUDA calls while its syncs return at once — the GPU waits for the
// host (docs/IMPORT.md). Before the host-bound cause, explain found only a LOW cold start.
TEST_CASE("the imported DataLoader-starvation trace is diagnosed host-bound or DataLoader-starved, MEDIUM or higher") {
  const std::string file = (data_dir() / "pytorch-dataloader-starvation.db").string();
  REQUIRE(std::filesystem::exists(file));
  TempDir dir;
  const std::string db = dir.file("dl.db");
  REQUIRE(test::run_causeway({"import", "ingero", file, "--db", db, "--quiet"}).exit_code == 0);
  auto explain = test::run_causeway({"explain", "--db", db, "--json"});
  REQUIRE(explain.exit_code == 0);
  json chains = json::parse(explain.out)["chains"];
  REQUIRE(!chains.empty());
  const json& top = chains[0];
  INFO(top.dump());
  CHECK((top["cause"] == "host_bound" || top["cause"] == "dataloader_starvation"));
  CHECK((top["severity"] == "HIGH" || top["severity"] == "MEDIUM"));
  CHECK(top["pid"] == 2233);
  CHECK(top["tid"] == 2233);
}
