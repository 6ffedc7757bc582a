// Launcher ranks put into one communicator, and sequences aligned by return times when a rank
// was inside a collective when its probes went live (its first traced call is the next one).
#include <doctest/doctest.h>

#include <vector>

#include "diagnosis/collectives.h"
#include "diagnosis/engine_title.h"
#include "diagnosis/rank_inference.h"

namespace causeway {

TEST_CASE("a rank that missed the first collective is aligned; the late rank is the straggler") {
  // 4 ranks, a blocking collective every 10 ms; rank 2 enters each 3 ms after the others and
  // all leave together at 10k ms + 3.2 ms. Ranks 0, 1, 3 were inside collective 0 when the
  // probes went live: their traced sequence starts at collective 1 (traced seq 0).
  RankInference ri;
  for (uint32_t r = 0; r < 4; ++r) ri.set_launcher(100 + r, static_cast<int32_t>(r), 4, "RANK", "job");
  std::vector<CollectiveEntry> entries;
  for (int k = 0; k < 40; ++k) {
    const int64_t t = k * 10'000'000;
    for (uint32_t r = 0; r < 4; ++r) {
      const bool late = r == 2;
      if (!late && k == 0) continue;
      CollectiveEntry e;
      e.comm = 0x7f00 + r;  // the handle: a pointer, different in every process
      e.seq = late ? k : k - 1;
      e.pid = e.tid = 100 + r;
      e.op = 1;
      e.ts_ns = t + (late ? 3'000'000 : 0) + r * 1000;
      entries.push_back(e);
      const int64_t end = t + 3'200'000 + r * 500;
      CHECK(ri.resolve(entries.back(), end));
    }
  }
  ri.align(entries);
  for (const auto& e : entries) CHECK(e.rank == static_cast<int32_t>(e.pid - 100));
  auto groups = group_collectives(entries);
  int with_straggler = 0;
  for (const auto& g : groups) {
    if (g.members.size() != 4) continue;
    REQUIRE(g.has_straggler);
    CHECK(entries[g.straggler].pid == 102);
    ++with_straggler;
  }
  CHECK(with_straggler == 39);
}

TEST_CASE("entries with a traced init, or of processes without a launcher rank, are left alone") {
  RankInference ri;
  ri.set_launcher(7, 1, 2, "RANK", "");
  CollectiveEntry known;
  known.pid = 7;
  known.rank = 0;
  known.comm = 55;
  CHECK_FALSE(ri.resolve(known, 0));
  CHECK(known.comm == 55);
  CollectiveEntry stranger;
  stranger.pid = 8;
  stranger.comm = 66;
  CHECK_FALSE(ri.resolve(stranger, 0));
  CHECK(stranger.rank == -1);
  CHECK(ri.source(7).empty());  // its traced init gave its rank, not the environment
  CHECK(ri.source(8).empty());
  CollectiveEntry unresolved;
  unresolved.pid = 7;
  unresolved.comm = 77;
  CHECK(ri.resolve(unresolved, 0));
  CHECK(ri.source(7) == "RANK");
}

TEST_CASE("engine titles: the tensor-parallel rank vLLM V1 and SGLang write into a worker's title") {
  // As /proc/PID/cmdline reads after setproctitle (NULs as spaces; the old argv area padded).
  auto t = parse_engine_title("VLLM::Worker_TP1");
  REQUIRE(t);
  CHECK(t->tp_rank == 1);
  CHECK(t->group == "VLLM::Worker");
  t = parse_engine_title("VLLM::Worker_PP1_TP3                ");
  REQUIRE(t);
  CHECK(t->tp_rank == 3);
  CHECK(t->group == "VLLM::Worker_PP1");
  t = parse_engine_title("VLLM::Worker_DP0_PP0_TP2_EP6");  // the EP rank differs within a TP group
  REQUIRE(t);
  CHECK(t->tp_rank == 2);
  CHECK(t->group == "VLLM::Worker_DP0_PP0");
  t = parse_engine_title("myco::Worker_TP0_DCP0");  // VLLM_PROCESS_NAME_PREFIX=myco
  REQUIRE(t);
  CHECK(t->group == "myco::Worker");
  t = parse_engine_title("sglang::scheduler_DP1_TP0_PP1");  // an SGLang order: PP after TP
  REQUIRE(t);
  CHECK(t->tp_rank == 0);
  CHECK(t->group == "sglang::scheduler_DP1_PP1");
  CHECK(parse_engine_title("sglang::scheduler_DP1_PP1_TP0")->group == "sglang::scheduler_DP1_PP1");
  // No TP rank (TP of 1), other processes of the engine, or not a title at all.
  CHECK_FALSE(parse_engine_title("VLLM::Worker"));
  CHECK_FALSE(parse_engine_title("VLLM::EngineCore"));
  CHECK_FALSE(parse_engine_title("VLLM::Worker_DP0"));
  CHECK_FALSE(parse_engine_title("python3 -m vllm.entrypoints.openai.api_server --tp 2"));
  CHECK_FALSE(parse_engine_title("/usr/bin/python3 -c from multiprocessing.spawn import spawn_main; spawn_main()"));
  CHECK_FALSE(parse_engine_title("::Worker_TP1"));
  CHECK_FALSE(parse_engine_title("VLLM::Worker_TP1_TP2"));
  CHECK_FALSE(parse_engine_title("VLLM::Worker_TP1_extra"));
  CHECK_FALSE(parse_engine_title("VLLM::Worker_TP999999"));
  CHECK_FALSE(parse_engine_title("VLLM::Worker_TP1\x1b[31m"));
  CHECK_FALSE(parse_engine_title("VLLM::Worker__TP1"));
}

namespace {

// One all-reduce on entry's process handle, traced after init (rank -1); resolves it.
CollectiveEntry untraced_init(RankInference& ri, uint32_t pid) {
  CollectiveEntry e;
  e.pid = e.tid = pid;
  e.comm = 0x7f00 + pid;
  e.op = 1;
  ri.resolve(e, 0);
  return e;
}

}  // namespace

TEST_CASE("ranks without launcher variables: the engine's title first, else the workers' order under their parent") {
  RankInference ri;
  ri.set_launcher(10, 0, 2, "RANK", "job");  // a launcher rank wins over its title
  const std::vector<ProcessFacts> procs = {
      {10, 1, "VLLM::Worker_TP", "VLLM::Worker_TP1"},
      // vLLM's multiproc executor: EngineCore 20's workers, pids not in rank order.
      {20, 19, "VLLM::EngineCor", "VLLM::EngineCore"},
      {22, 20, "VLLM::Worker_TP", "VLLM::Worker_TP1"},
      {21, 20, "VLLM::Worker_TP", "VLLM::Worker_TP0"},
      {23, 20, "python3", "/usr/bin/python3 -c from multiprocessing.resource_tracker import main;main(9)"},
      // Two titles with one TP rank under one parent: not trusted, left to structure.
      {31, 30, "VLLM::Worker_TP", "VLLM::Worker_TP0"},
      {32, 30, "VLLM::Worker_TP", "VLLM::Worker_TP0"},
      // No title: siblings with one comm, numbered by pid order.
      {42, 40, "pt_main_thread", "python3 worker.py"},
      {41, 40, "pt_main_thread", "python3 worker.py"},
      {43, 40, "bash", "bash"},  // another name: not one of them
      {50, 1, "python3", "python3 alone.py"},
  };
  ri.add_processes(procs);
  CHECK(untraced_init(ri, 10).rank == 0);
  CHECK(ri.source(10) == "RANK");
  const CollectiveEntry w1 = untraced_init(ri, 22), w0 = untraced_init(ri, 21);
  CHECK(w1.rank == 1);
  CHECK(w0.rank == 0);
  CHECK(w1.nranks == 2);
  CHECK(w0.comm == w1.comm);  // one communicator
  CHECK(ri.source(22) == kTitleRank);
  CHECK(ri.label(22, w1.rank) == "rank 1");
  const CollectiveEntry d1 = untraced_init(ri, 31), d2 = untraced_init(ri, 32);
  CHECK(d1.comm == d2.comm);
  CHECK(ri.structural(31));
  const CollectiveEntry s2 = untraced_init(ri, 42), s1 = untraced_init(ri, 41);
  CHECK(s1.comm == s2.comm);
  CHECK(s1.comm != w0.comm);
  CHECK(ri.source(42) == kStructuralRank);
  CHECK(ri.label(42, s2.rank) == "worker 2 of 2 by pid order");
  CHECK(ri.label(41, s1.rank) == "worker 1 of 2 by pid order");
  CHECK(untraced_init(ri, 43).rank == -1);
  CHECK(untraced_init(ri, 50).rank == -1);
  CHECK(untraced_init(ri, 23).rank == -1);  // the resource tracker: alone with its comm
}

// Another host's numbering (restored from the fleet store, fleet/ship_table.cpp) as the history:
// collective k of the job returned at k * 10 ms + 3 ms and is numbered k + 1000 there.
void other_host_numbering(RankInference& ri, int64_t comm, int from, int to) {
  for (int k = from; k < to; ++k) ri.restore_history(comm, k + 1000, k * 10'000'000 + 3'000'000);
}

std::vector<CollectiveEntry> one_rank(RankInference& ri, int first, int last) {
  ri.set_launcher(100, 0, 2, "RANK", "job");
  std::vector<CollectiveEntry> entries;
  for (int k = first; k < last; ++k) {
    CollectiveEntry e;
    e.comm = 0x7f00;
    e.seq = k - first + 1;  // traced from the first call after attach
    e.pid = e.tid = 100;
    e.op = 1;
    e.ts_ns = k * 10'000'000;
    entries.push_back(e);
    REQUIRE(ri.resolve(entries.back(), e.ts_ns + 3'000'000 + 20'000));
  }
  return entries;
}

TEST_CASE("a rank joins the numbering another host stored, whether it attached after that host or before") {
  for (const auto& [first, other_from] : {std::pair{50, 0}, std::pair{0, 50}}) {
    CAPTURE(first);
    RankInference ri;
    std::vector<CollectiveEntry> entries = one_rank(ri, first, 200);
    const int64_t comm = entries.front().comm;  // the job communicator resolve() gave it
    REQUIRE(comm != 0x7f00);
    REQUIRE_FALSE(ri.has_history(comm));
    other_host_numbering(ri, comm, other_from, 200);
    REQUIRE(ri.has_history(comm));
    ri.align(entries);
    for (size_t i = 0; i < entries.size(); ++i) CHECK(entries[i].seq == first + static_cast<int64_t>(i) + 1000);
  }
}

TEST_CASE("a numbering restored from the store is kept: the next batch's calls get the same shift") {
  RankInference ri;
  ri.set_launcher(100, 0, 2, "RANK", "job");
  CollectiveEntry probe;
  probe.comm = 0x7f00, probe.pid = 100, probe.seq = 1;
  REQUIRE(ri.resolve(probe, 0));
  RankInference next;  // the next ship: the stream as stored (shift 37), then later calls
  next.restore_stream(100, 0x7f00, probe.comm, 37);
  std::vector<CollectiveEntry> later = one_rank(next, 300, 310);
  next.align(later);
  for (size_t i = 0; i < later.size(); ++i) {
    CHECK(later[i].comm == probe.comm);
    CHECK(later[i].seq == static_cast<int64_t>(i) + 1 + 37);
  }
}

}  // namespace causeway
