// The default store (fast launches counted in the kernel) gives the chains --record-all gives on
// the same calls, byte for byte, launch ops included: their baselines and statistics come from
// the rollups, which hold every call either way (issue 36; docs/COLLECTOR.md "Aggregated calls",
// "Same answers either way"; docs/DIAGNOSIS.md "Baselines of counted ops"). Two traced runs never see the same calls (timings, pids), so the same
// input is made once: cw_workload traced with --record-all, and a copy of that DB folded into
// what the default mode stores by the kernel's own rule (tests/bpf/record_all_fold.h). Both are
// diagnosed the same way, then `explain --json`, `explain --tail --json` and `stats --json` are
// compared byte for byte.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "diagnosis/correlator.h"
#include "tests/bpf/diagnosis_live_support.h"
#include "tests/bpf/record_all_fold.h"
#include "tracedb/op_catalog.h"
#include "tracedb/op_recording.h"

namespace causeway::test {
namespace {

std::string answer(const std::vector<std::string>& args) {
  auto r = run_causeway(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// Where two answers part, for the failure message.
std::string chain_lines(const std::string& explain_json) {
  std::string out;
  const json doc = json::parse(explain_json);
  for (const json& c : doc["chains"])
    out += "\n    " + c.value("cause", "") + " " + c.value("op", "") + " " + c.value("where", "") + " calls " +
           S(c.value("calls", 0)) + " lost_us " + c["lost_us"].dump() + " " + c.value("severity", "") + " p50_us " + c["p50_us"].dump();
  return out;
}

std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i > 200 ? i - 200 : 0;
  return "at byte " + S(static_cast<int64_t>(i)) + ":\n  record-all: " + a.substr(from, 400) + "\n  default:    " + b.substr(from, 400);
}

const std::string kCalls = kLibraryCall;

}  // namespace

TEST_CASE("the calls counted in the kernel change no chain: --record-all and its fold give the same chains") {
  TempDir dir;
  // Three launches and a sync per step at 20 µs, every 150th step 2 ms slow (launches and sync
  // alike: slow calls, recorded either way), 12,000 steps, not paced: ~48k calls, most of them
  // launches the default mode only counts. The busy host adds its own stalls.
  Traced t = trace_program(dir,
                           workload({"--ops", "launch,launch,launch,stream_sync", "--latency-us", "20", "--rate", "0",
                                     "--iterations", "12000", "--slow-every", "150", "--slow-us", "2000"}),
                           {"--lib", testprog("libcudart.so.13"), "--record-all", "--no-diagnose"});
  // The fold reads "explains something" from the stack the kernel took: none may have failed.
  REQUIRE(q_int(t.db, "SELECT coalesce(max(value), 0) FROM collector_stats WHERE name = 'dropped_stack'") == 0);
  const std::string folded = dir.file("folded.db");
  std::filesystem::copy_file(t.db, folded);
  const int64_t sid = q_int(t.db, "SELECT max(id) FROM sessions");
  const FoldedCalls f = fold_counted_calls(folded, sid);
  MESSAGE("record-all: " << q_int(t.db, "SELECT count(*) FROM events WHERE " + kCalls) << " call rows; folded: " << f.counted
                         << " counted in " << f.runs << " runs, " << f.switched
                         << " kept as rows for a switch inside, workload " << t.workload_s << " s");
  // Most launches are only counted, and every call is still there: as a row or in a run.
  CHECK(f.counted > 20'000);
  CHECK(q_int(folded, "SELECT count(*) FROM events WHERE " + kCalls) +
            q_int(folded, "SELECT coalesce(sum(a0), 0) FROM events WHERE op_id = 405") ==
        q_int(t.db, "SELECT count(*) FROM events WHERE " + kCalls));

  for (const std::string& db : {t.db, folded}) {
    auto n = diagnose_and_store(db);
    REQUIRE_MESSAGE(static_cast<bool>(n), (n ? std::string() : n.error().message));
  }
  const std::string all_explain = answer({"explain", "--json", "--limit", "1000", "--db", t.db});
  const std::string folded_explain = answer({"explain", "--json", "--limit", "1000", "--db", folded});
  const std::string both = "record-all:" + chain_lines(all_explain) + "\n  default:" + chain_lines(folded_explain);
  const json all_chains = json::parse(all_explain)["chains"], folded_chains = json::parse(folded_explain)["chains"];
  REQUIRE(!all_chains.empty());
  // The planted slow steps are chains of the workload either way.
  bool workload_chain = false;
  for (const json& c : all_chains) workload_chain = workload_chain || c.value("pid", 0) == t.pid;
  CHECK(workload_chain);
  // The slow launches make chains on a launch op (fast_counted): what the comparison is about.
  bool launch_chain = false;
  for (const json& c : all_chains)
    if (const OpInfo* op = find_op(c.value("op", "")); op && is_fast_counted_op(op->id)) launch_chain = true;
  CHECK_MESSAGE(launch_chain, both);
  // Every chain is the same, byte for byte, launch chains included: launch_bound's and
  // host_bound's split of the thread's time too, since a launch the thread was switched out in
  // is a row in both stores (bpf/calls.bpf.h mark_switched_out).
  REQUIRE_MESSAGE(all_chains.size() == folded_chains.size(), both);
  for (size_t i = 0; i < all_chains.size(); ++i) {
    const std::string a = all_chains[i].dump(), b = folded_chains[i].dump();
    const std::string why = both + "\n" + first_difference(a, b);
    CHECK_MESSAGE(a == b, why);
  }
  json all_doc = json::parse(all_explain), folded_doc = json::parse(folded_explain);
  all_doc.erase("chains");
  folded_doc.erase("chains");
  CHECK(all_doc.dump() == folded_doc.dump());
  // The tail of each op by cause, byte for byte.
  const std::string all_tail = answer({"explain", "--tail", "--json", "--db", t.db});
  const std::string folded_tail = answer({"explain", "--tail", "--json", "--db", folded});
  CHECK_MESSAGE(all_tail == folded_tail, first_difference(all_tail, folded_tail));
  // Counts and percentiles: the rollups hold every call either way (the fold keeps the
  // record-all rollups; the live default writes them from the kernel's histograms, within a
  // bucket: docs/COLLECTOR.md "What stays exact").
  const std::string all_stats = answer({"stats", "--json", "--db", t.db});
  const std::string folded_stats = answer({"stats", "--json", "--db", folded});
  CHECK_MESSAGE(all_stats == folded_stats, first_difference(all_stats, folded_stats));
}

}  // namespace causeway::test
