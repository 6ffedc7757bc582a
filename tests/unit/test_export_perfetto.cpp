// `causeway export --format perfetto` on demo sessions, parsed back and checked by a
// structural validator of the Chrome Trace Event format as Perfetto imports it: names for
// every process and thread track, properly nested slices per thread, every flow bound to a
// slice at both ends, and counts that match the trace DB (calls, off-CPU intervals, chains,
// collectives across ranks).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "diagnosis/correlator.h"
#include "synth/scenarios.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using causeway::test::TempDir;
using nlohmann::json;

namespace {

using Track = std::pair<int64_t, int64_t>;  // (pid, tid)

int64_t ns(const json& v) { return std::llround(v.get<double>() * 1000.0); }

struct Slice {
  int64_t from, to;
  std::string name;
};

struct Parsed {
  json doc;
  std::map<int64_t, int> process_names;
  std::map<Track, int> thread_names;
  std::set<int64_t> sort_indexed;
  std::map<Track, std::vector<Slice>> slices;
  std::map<std::string, int64_t> x_by_cat;
  int64_t off_cpu = 0, chain_slices = 0, async_begin = 0, async_end = 0, instants = 0;
  std::map<std::pair<std::string, int64_t>, std::vector<json>> flows;  // (cat, id) -> events
};

int64_t sql_count(sqlite3* db, const std::string& sql) {
  auto n = query_int(db, sql);
  REQUIRE(n.ok());
  return n->value_or(0);
}

// Structural checks that hold for any export; returns what the count checks need.
Parsed validate(const std::string& text) {
  Parsed p;
  p.doc = json::parse(text);
  REQUIRE(p.doc.is_object());
  REQUIRE(p.doc["traceEvents"].is_array());
  CHECK(p.doc["displayTimeUnit"] == "ns");
  std::set<int64_t> pids_used;
  std::set<Track> tracks_used;
  for (const json& e : p.doc["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e["ph"];
    const Track t{e["pid"].get<int64_t>(), e.value("tid", int64_t{0})};
    if (ph == "M") {
      if (e["name"] == "process_name") {
        CHECK(e["args"]["name"].is_string());
        ++p.process_names[t.first];
      } else if (e["name"] == "thread_name") {
        ++p.thread_names[t];
      } else if (e["name"] == "process_sort_index") {
        p.sort_indexed.insert(t.first);
      } else {
        CHECK(e["name"] == "process_labels");
      }
      continue;
    }
    REQUIRE(e["ts"].is_number());
    REQUIRE(e["name"].is_string());
    pids_used.insert(t.first);
    if (ph == "X") {
      REQUIRE(e["dur"].is_number());
      CHECK(e["dur"].get<double>() >= 0);
      tracks_used.insert(t);
      p.slices[t].push_back({ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]});
      const std::string cat = e["cat"];
      ++p.x_by_cat[cat];
      if (cat == "sched") ++p.off_cpu;
      if (cat == "chain" && e["name"].get<std::string>().starts_with("[")) ++p.chain_slices;
    } else if (ph == "i") {
      CHECK(e["s"] == "t");
      tracks_used.insert(t);
      ++p.instants;
    } else if (ph == "b" || ph == "e") {
      REQUIRE(e.contains("id"));
      (ph == "b" ? p.async_begin : p.async_end)++;
    } else if (ph == "s" || ph == "f") {
      p.flows[{e["cat"], e["id"].get<int64_t>()}].push_back(e);
    } else {
      FAIL("unexpected phase " << ph);
    }
  }
  for (int64_t pid : pids_used) {
    CAPTURE(pid);
    CHECK(p.process_names.count(pid) == 1);
  }
  for (const auto& [pid, n] : p.process_names) CHECK(n == 1);
  for (const Track& t : tracks_used) {
    CAPTURE(t.first);
    CAPTURE(t.second);
    CHECK(p.thread_names.count(t) == 1);
  }
  for (const auto& [t, n] : p.thread_names) CHECK(n == 1);
  CHECK(p.async_begin == p.async_end);
  // Slices on one thread nest properly (Perfetto's JSON importer requires it).
  for (auto& [t, v] : p.slices) {
    std::sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) { return a.from != b.from ? a.from < b.from : a.to > b.to; });
    std::vector<int64_t> stack;
    for (const Slice& s : v) {
      while (!stack.empty() && stack.back() <= s.from) stack.pop_back();
      if (!stack.empty()) {
        CAPTURE(s.name);
        CHECK(s.to <= stack.back());
      }
      stack.push_back(s.to);
    }
  }
  // Each flow: one start, one end, each inside a slice of its own track.
  for (const auto& [key, evs] : p.flows) {
    REQUIRE(evs.size() == 2);
    int starts = 0;
    for (const json& e : evs) {
      starts += e["ph"] == "s";
      if (e["ph"] == "f") CHECK(e["bp"] == "e");
      const Track t{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()};
      const int64_t at = ns(e["ts"]);
      const auto& v = p.slices[t];
      CHECK(std::any_of(v.begin(), v.end(), [&](const Slice& s) { return s.from <= at && at <= s.to; }));
    }
    CHECK(starts == 1);
  }
  return p;
}

struct Demo {
  TempDir dir;
  std::string db;
  int64_t session = 0;
  explicit Demo(const std::string& scenario) : db(dir.file("demo.db")) {
    DemoOptions o;
    o.scenario = scenario;
    auto r = run_demo(db, o);
    REQUIRE(r.ok());
    session = r->session_id;
    auto d = diagnose_and_store(db, session);
    REQUIRE(d.ok());
  }
  std::string export_json(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"export", "--format", "perfetto", "--db", db, "-o", dir.file("out.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = test::run_causeway(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return test::read_file(dir.file("out.json"));
  }
};

// Traced processes: those with GPU calls, as the exporter defines them.
const char* kTraced =
    "(SELECT DISTINCT r.pid FROM rollups r JOIN ops o ON o.id = r.op_id WHERE o.source IN ('cuda','driver','nccl'))";

}  // namespace

TEST_CASE("incident demo: calls with args, off-CPU slices naming who ran, chains with culprit flows") {
  Demo d("incident");
  Parsed p = validate(d.export_json());
  auto h = open_read_only(d.db);
  REQUIRE(h.ok());
  sqlite3* db = h->get();
  for (const char* src : {"cuda", "driver", "nccl"}) {
    CAPTURE(src);
    CHECK(p.x_by_cat[src] == sql_count(db, std::string("SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id "
                                                       "WHERE o.kind = 'call' AND o.source = '") + src + "'"));
  }
  CHECK(p.off_cpu > 0);
  CHECK(p.off_cpu == sql_count(db, std::string("SELECT count(*) FROM sched WHERE prev_tid != 0 AND prev_pid IN ") + kTraced));
  const int64_t chains = sql_count(db, "SELECT count(*) FROM chains");
  CHECK(chains > 0);
  CHECK(p.chain_slices == chains);
  int64_t chain_flows = 0;
  for (const auto& [key, evs] : p.flows) chain_flows += key.first == "chain";
  CHECK(chain_flows == sql_count(db, "SELECT count(*) FROM chains WHERE culprit_pid IS NOT NULL"));
  // Every process that has events is one process track; every thread with events one thread track.
  CHECK(static_cast<int64_t>(p.process_names.size()) >= sql_count(db, "SELECT count(DISTINCT pid) FROM events"));
  // Calls carry their decoded args; off-CPU slices say who ran.
  bool saw_args = false, saw_next = false;
  for (const json& e : p.doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "cuda" && e.contains("args") && e["args"].contains("stream")) saw_args = true;
    if (e["cat"] == "sched" && e["args"].contains("next") && e["args"]["next"].get<std::string>().find("tar") != std::string::npos)
      saw_next = true;
  }
  CHECK(saw_args);
  CHECK(saw_next);
}

TEST_CASE("nccl-straggler demo: collectives aligned across ranks by (comm, seq)") {
  Demo d("nccl-straggler");
  Parsed p = validate(d.export_json());
  auto h = open_read_only(d.db);
  REQUIRE(h.ok());
  // Arrows: for each collective, one from the first rank to enter to each later rank.
  const int64_t expected = sql_count(h->get(),
                                     "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM events e JOIN ops o "
                                     "ON o.id = e.op_id WHERE o.source = 'nccl' AND o.arg_names LIKE 'count,comm_hash,rank,nranks,seq%' "
                                     "GROUP BY e.a1, e.a4)");
  int64_t coll_flows = 0;
  for (const auto& [key, evs] : p.flows) coll_flows += key.first == "nccl_collective";
  CHECK(expected > 0);
  CHECK(coll_flows == expected);
  // Ranks are ordered: every process with collectives has a sort index.
  CHECK(static_cast<int64_t>(p.sort_indexed.size()) ==
        sql_count(h->get(), "SELECT count(DISTINCT e.pid) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.source = 'nccl' "
                            "AND o.arg_names LIKE 'count,comm_hash,rank,nranks,seq%'"));
}

TEST_CASE("io-stall demo: block I/O as async slices; --pid and --since narrow the export") {
  Demo d("io-stall");
  Parsed all = validate(d.export_json());
  auto h = open_read_only(d.db);
  REQUIRE(h.ok());
  CHECK(all.async_begin == sql_count(h->get(), "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.source = 'io'"));
  const int64_t pid = sql_count(h->get(), std::string("SELECT min(pid) FROM ") + kTraced);
  Parsed one = validate(d.export_json({"--pid", std::to_string(pid)}));
  int64_t calls_one = 0, calls_all = 0;
  for (const auto& [cat, n] : one.x_by_cat) calls_one += cat == "cuda" ? n : 0;
  for (const auto& [cat, n] : all.x_by_cat) calls_all += cat == "cuda" ? n : 0;
  CHECK(calls_one == sql_count(h->get(), "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.source = 'cuda' "
                                         "AND o.kind = 'call' AND e.pid = " + std::to_string(pid)));
  for (const json& e : one.doc["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "cuda") CHECK(e["pid"].get<int64_t>() == pid);
  Parsed recent = validate(d.export_json({"--since", "2s"}));
  int64_t calls_recent = 0;
  for (const auto& [cat, n] : recent.x_by_cat) calls_recent += cat == "cuda" ? n : 0;
  CHECK(calls_recent > 0);
  CHECK(calls_recent < calls_all);
}

TEST_CASE("export refuses a missing DB and an unknown format") {
  TempDir dir;
  auto r = test::run_causeway({"export", "--format", "perfetto", "--db", dir.file("none.db"), "-o", dir.file("x.json")});
  CHECK(r.exit_code == 1);
  CHECK_FALSE(test::file_exists(dir.file("none.db")));
  CHECK(test::run_causeway({"export", "--format", "pprof", "--db", dir.file("none.db"), "-o", dir.file("x.json")}).exit_code == 2);
}

TEST_CASE("imported real traces (ingero) export to a valid timeline") {
  const auto dir = std::filesystem::path(test::source_dir()) / ".." / "shared" / "data" / "ingero";
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".db") files.push_back(e.path().string());
  if (files.empty()) {
    MESSAGE("no ingero traces beside the source tree: this case checks nothing here");
    return;
  }
  for (const std::string& file : files) {
    CAPTURE(file);
    TempDir tmp;
    const std::string db = tmp.file("imp.db"), out = tmp.file("imp.json");
    REQUIRE(test::run_causeway({"import", "ingero", file, "--db", db, "--quiet"}).exit_code == 0);
    auto r = test::run_causeway({"export", "--format", "perfetto", "--db", db, "-o", out});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    Parsed p = validate(test::read_file(out));
    auto h = open_read_only(db);
    REQUIRE(h.ok());
    // Every imported event is in the timeline once: a slice, an async I/O slice or an instant.
    int64_t x = 0;
    for (const auto& [cat, n] : p.x_by_cat) x += cat == "chain" ? 0 : n;
    const int64_t chain_instants = sql_count(h->get(), "SELECT count(*) FROM chains");
    int64_t timeline_instants = 0;
    for (const json& e : p.doc["traceEvents"])
      if (e["ph"] == "i" && e["cat"].get<std::string>().starts_with("chain")) ++timeline_instants;
    CHECK(x + p.async_begin + p.instants - timeline_instants == sql_count(h->get(), "SELECT count(*) FROM events"));
    CHECK(timeline_instants >= chain_instants);
  }
}
