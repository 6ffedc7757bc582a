// NCCL collectives matched across ranks by (communicator hash, per-communicator sequence).
//
// Every rank's host thread enters the same collective (comm, seq); the collective cannot
// finish before the last rank enters, so the ranks that entered earlier spend the gap
// waiting (it shows in their stream sync after the enqueue). The last rank is the
// straggler of that collective when it entered at least `min_gap_ns` after the second-last:
// a smaller gap is ordinary host jitter.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace causeway {

struct CollectiveEntry {
  int64_t comm = 0;   // a1: communicator hash
  int64_t seq = 0;    // a4: per-communicator sequence number
  uint32_t pid = 0, tid = 0;
  int32_t rank = -1;  // a2
  int32_t nranks = 0; // a3
  uint16_t op = 0;
  int64_t ts_ns = 0;  // entry (call start)
  int64_t end_ns = 0; // return
  // When this thread's previous collective in view returned: its step (the work it did before
  // entering this one) began then; 0 when none is in view. Set by mark_step_starts.
  int64_t step_from_ns = 0;
};

struct CollectiveGroup {
  int64_t comm = 0, seq = 0;
  uint16_t op = 0;
  std::vector<size_t> members;  // indices into the entries, sorted by entry time
  int64_t first_entry_ns = 0, last_entry_ns = 0;
  bool has_straggler = false;
  size_t straggler = 0;        // index into the entries (valid when has_straggler)
  int64_t lateness_ns = 0;     // straggler's entry minus the second-last entry
  int64_t wait_ns = 0;         // sum over the other ranks of (last entry - their entry)
};

// Groups entries (any order) by (comm, seq); groups with a single rank are kept (a 2-node
// job sees only its local ranks) but never have a straggler.
// Sets each entry's step_from_ns from the entries of its thread (any order in, order kept).
void mark_step_starts(std::span<CollectiveEntry> entries);

// Where a late rank's "late for want of a CPU" window starts: as long again as its lateness
// before it entered (the share of its step it lost), never before its own step began — CPU
// lost in the step before made that step late, not this one (docs/INFERENCE.md "Claims on one
// gap").
int64_t late_for_cpu_window_from(const CollectiveEntry& late, int64_t lateness_ns);

std::vector<CollectiveGroup> group_collectives(std::span<const CollectiveEntry> entries, int64_t min_gap_ns = 1'000'000);

}  // namespace causeway
