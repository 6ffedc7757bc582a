// Communicators found from the collectives themselves (diagnosis/collective_membership.h;
// docs/INFERENCE.md "How ranks are found", source 5): a starved rank's late returns still
// pair, unrelated jobs doing the same collective at once do not.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "diagnosis/collective_membership.h"
#include "diagnosis/collectives.h"
#include "diagnosis/rank_inference.h"

namespace causeway {
namespace {

constexpr int64_t kMsNs = 1'000'000;
constexpr uint16_t kAllReduceOp = 7;

CollectiveSpan call_of(uint32_t pid, int64_t handle, int64_t seq, int64_t entry, int64_t end, int64_t count = 8192) {
  return {.pid = pid, .handle = handle, .seq = seq, .op = kAllReduceOp, .count = count, .datatype = 6, .entry_ns = entry, .end_ns = end};
}

// A two-rank job: a collective every `period`; rank 1 enters `late` after rank 0 and leaves at
// once, rank 0 leaves `starved` after rank 1 (woken, then waiting for its CPU). Rank 1's probes
// went live inside collective 0: its traced sequence is one behind rank 0's.
void two_ranks(std::vector<CollectiveSpan>& out, uint32_t pid0, int64_t t0, int64_t period, int n, int64_t late,
               int64_t starved) {
  for (int k = 0; k < n; ++k) {
    const int64_t t = t0 + k * period;
    const int64_t rank1_leaves = t + late + 100'000;
    out.push_back(call_of(pid0, 0x7f00a000, k, t, rank1_leaves + starved));
    if (k > 0) out.push_back(call_of(pid0 + 1, 0x7f00b000, k - 1, t + late, rank1_leaves));
  }
}

}  // namespace

TEST_CASE("a rank starved of CPU returns 6 ms after its peer, call after call: still one communicator") {
  std::vector<CollectiveSpan> calls;
  // 3 ms late entries, the waiting rank back 6 ms after the late one: never within 1 ms.
  two_ranks(calls, 10, 0, 12 * kMsNs, 200, 3 * kMsNs, 6 * kMsNs);
  const auto found = communicators_from_collectives(calls);
  REQUIRE(found.size() == 1);
  REQUIRE(found[0].members.size() == 2);
  CHECK(found[0].members[0].pid == 10);
  CHECK(found[0].members[1].pid == 11);
  // Rank 1's traced seq s is rank 0's s + 1: lined up by the shift, not by return times.
  CHECK(found[0].members[1].seq_shift - found[0].members[0].seq_shift == 1);

  // Through RankInference: both are members (no rank number), and after align() every
  // collective groups both ranks with rank 1 the straggler, 3 ms late.
  RankInference ri;
  ri.add_from_collectives(calls);
  std::vector<CollectiveEntry> entries;
  for (const CollectiveSpan& c : calls) {
    entries.push_back({.comm = c.handle, .seq = c.seq, .pid = c.pid, .tid = c.pid, .rank = -1, .op = c.op, .ts_ns = c.entry_ns});
    CHECK(ri.resolve(entries.back(), c.end_ns));
  }
  ri.align(entries);
  CHECK(ri.source(10) == "collective_timing");
  CHECK(ri.structural(11));
  size_t pairs = 0;
  for (const CollectiveGroup& g : group_collectives(entries)) {
    if (g.members.size() != 2) continue;
    ++pairs;
    REQUIRE(g.has_straggler);
    CHECK(entries[g.straggler].pid == 11);
    CHECK(g.lateness_ns == 3 * kMsNs);
  }
  CHECK(pairs == 199);
}

TEST_CASE("two unrelated jobs doing the same all-reduce at once, both waiting most of the time, are two communicators") {
  std::vector<CollectiveSpan> calls;
  // Job A (pids 20, 21) and job B (30, 31): one op, count and datatype, 300 calls each over
  // the same 3 s, rank 1 of each 7 ms late, so rank 0 of each is inside a collective 70% of the
  // time: chance overlaps across the jobs are common, but their calls drift apart (10 ms vs
  // 10.3 ms a call) and do not complete together.
  two_ranks(calls, 20, 0, 10 * kMsNs, 300, 7 * kMsNs, 0);
  two_ranks(calls, 30, 2 * kMsNs, 10'300'000, 300, 7 * kMsNs, 0);
  const auto found = communicators_from_collectives(calls);
  REQUIRE(found.size() == 2);
  for (const FoundCommunicator& f : found) {
    REQUIRE(f.members.size() == 2);
    CHECK(f.members[0].pid / 10 == f.members[1].pid / 10);
  }
  // Across the jobs no stream pairs, and it is the rule that says no, not a lack of overlap:
  // rank 0 of A and rank 0 of B overlap often.
  auto stream = [&](uint32_t pid) {
    std::vector<CollectiveSpan> s;
    for (const auto& c : calls)
      if (c.pid == pid) s.push_back(c);
    return s;
  };
  for (uint32_t a : {20u, 21u})
    for (uint32_t b : {30u, 31u}) {
      CAPTURE(a);
      CAPTURE(b);
      CHECK_FALSE(pair_streams(stream(a), stream(b)).paired);
    }
  const StreamPairing zeros = pair_streams(stream(20), stream(30));
  CHECK(zeros.overlapped >= kMembershipMinCalls);
}

TEST_CASE("membership: another count is another collective; too few calls, or a one-sided stream, pair nothing") {
  std::vector<CollectiveSpan> calls;
  two_ranks(calls, 40, 0, 10 * kMsNs, 100, 2 * kMsNs, 0);
  // Pid 50 calls at the same times as 40 but with another element count.
  for (int k = 0; k < 100; ++k) calls.push_back(call_of(50, 0x1, k, k * 10 * kMsNs, k * 10 * kMsNs + 2'100'000, 1024));
  // Pids 60 and 61 return together but only 5 times.
  two_ranks(calls, 60, 0, 10 * kMsNs, 6, 0, 0);
  // Pid 70 made 100 calls overlapping 40's first 50: as many calls were not made on both.
  for (int k = 0; k < 100; ++k) calls.push_back(call_of(70, 0x2, k, k * 5 * kMsNs, k * 5 * kMsNs + 2'100'000));
  const auto found = communicators_from_collectives(calls);
  REQUIRE(found.size() == 1);
  REQUIRE(found[0].members.size() == 2);
  CHECK(found[0].members[0].pid == 40);
  CHECK(found[0].members[1].pid == 41);
}

}  // namespace causeway
