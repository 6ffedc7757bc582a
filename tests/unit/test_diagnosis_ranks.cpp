// The call-level nccl_straggler chain when the communicator was formed before the trace and
// the ranks have no launcher variable (docs/INFERENCE.md "How ranks are found"): the demo's
// 4-rank job (rank 2, pid 6003, late) rewritten as traced after init — no ncclCommInitRank,
// each collective with its process's own handle and rank -1 — its ranks then found from the
// engine titles, else from their order under their parent.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "diagnosis/correlator.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"

using namespace causeway;
using causeway::test::TempDir;
using json = nlohmann::json;

namespace {

// Blocking collectives, as NCCL's are: every rank leaves 30 µs after the last entered (what
// the alignment of sequences reads). `naming`: SQL run on the ranks' processes rows.
json straggler_chain(const std::string& naming) {
  TempDir dir;
  const std::string path = dir.file("d.db");
  DemoOptions o;
  o.scenario = "nccl-straggler";
  o.seed = 3;
  o.start_ns = 1'790'000'000'000'000'000;
  auto d = run_demo(path, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  const std::string coll = "op_id IN (SELECT id FROM ops WHERE family = 'collective')";
  const std::string sql =
      "CREATE TEMP TABLE g AS SELECT a1, a4, max(ts_ns) AS last FROM events WHERE " + coll + " GROUP BY a1, a4; "
      "UPDATE events SET dur_ns = (SELECT last FROM g WHERE g.a1 = events.a1 AND g.a4 = events.a4) + 30000 - ts_ns "
      "WHERE " + coll + "; "
      "DELETE FROM events WHERE op_id IN (SELECT id FROM ops WHERE name = 'ncclCommInitRank'); "
      "UPDATE events SET a1 = 140000000000000 + pid * 4096, a2 = -1, a3 = 0 WHERE " + coll + "; " + naming;
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(raw);
  REQUIRE_MESSAGE(rc == SQLITE_OK, msg);
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto chains = diagnose_session(db->get(), d->session_id);
  REQUIRE_MESSAGE(chains.ok(), chains.error().message);
  for (const auto& c : *chains)
    if (c.cause == "nccl_straggler") return json::parse(c.doc);
  FAIL("no nccl_straggler chain");
  return {};
}

}  // namespace

TEST_CASE("nccl_straggler without init or launcher ranks: the engine's titles give the rank") {
  const json c = straggler_chain(
      "UPDATE processes SET comm = 'VLLM::Worker_TP', cmdline = 'VLLM::Worker_TP' || (pid - 6001) WHERE pid BETWEEN 6001 AND 6004;");
  CAPTURE(c.dump());
  CHECK(c["culprit"]["pid"] == 6003);
  CHECK(c["culprit"]["rank"] == 2);
  CHECK(c["culprit"]["rank_source"] == "process_title");
  CHECK(c["summary"].get<std::string>().rfind("rank 2 (pid 6003)", 0) == 0);
}

TEST_CASE("nccl_straggler without init, launcher ranks or titles: the late pid is named, its rank is not") {
  // The demo's ranks as they are: four "python3" children of pid 6000, no title.
  const json c = straggler_chain("");
  CAPTURE(c.dump());
  CHECK(c["culprit"]["pid"] == 6003);
  CHECK_FALSE(c["culprit"].contains("rank"));
  CHECK(c["culprit"]["rank_source"] == "structural");
  CHECK(c["summary"].get<std::string>().rfind("worker 3 of 4 by pid order (pid 6003)", 0) == 0);
}
