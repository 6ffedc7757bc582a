// Communicators found from the collectives themselves, when no traced init, launcher
// variable, process title or structure says which processes are one (docs/INFERENCE.md
// "How ranks are found", source 5).
//
// A blocking collective cannot return on one rank before every rank has entered it, so the
// calls of one communicator's ranks OVERLAP sequence by sequence (the [entry, return] of one
// rank's n-th call overlaps every other rank's n-th), however late a rank entered and however
// late a rank starved of CPU got back to return. Returning together (within 1 ms) is only the
// unloaded case. Overlap alone is also what two unrelated jobs' long waits give by chance, so
// two call streams (one process's calls on one communicator handle) are paired only when:
//   - one sequence shift holds over the whole time both were traced: at each position the
//     same op, element count and datatype, overlapping, for >= 90% of the calls of the one
//     with more, and both streams made as many calls there (within 2 + 1%): unrelated jobs
//     drift apart;
//   - the calls complete together: in most of them the first rank left within 1 ms of the
//     last rank's entry (the collective finished once the last rank came) or both left within
//     1 ms of each other; chance overlaps of two long waits end anywhere inside them.
// Streams paired directly or through others are one communicator. Its members' order is by
// pid: the rank numbers stay unknown.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace causeway {

// One traced collective as membership reads it.
struct CollectiveSpan {
  uint32_t pid = 0;
  int64_t handle = 0;    // a1: the process's communicator handle (one stream of calls per handle)
  int64_t seq = 0;       // a4: the stream's sequence number, counted in the kernel (lost records too)
  uint16_t op = 0;
  int64_t count = 0;     // a0: elements
  int64_t datatype = 0;  // a5 & 255
  int64_t entry_ns = 0;
  int64_t end_ns = 0;    // when the call returned
};

// How stream b's calls line up with stream a's (pair_streams).
struct StreamPairing {
  bool paired = false;
  int64_t seq_shift = 0;            // b's call of seq s + seq_shift is a's call of seq s
  size_t calls_a = 0, calls_b = 0;  // calls while both were traced
  size_t overlapped = 0;            // positions of one kind whose calls overlapped
  size_t completed_together = 0;    // of those, the ones that completed together
};

// Thresholds of the rule in the header comment.
inline constexpr size_t kMembershipMinCalls = 8;
inline constexpr double kMembershipMinOverlap = 0.9;    // of the calls of the stream with more
inline constexpr double kMembershipMinTogether = 0.6;   // of the overlapping calls
inline constexpr int64_t kMembershipTogetherNs = 1'000'000;

// Whether streams a and b (each one process's calls on one handle, sorted by seq) are one
// communicator, and at which shift.
StreamPairing pair_streams(std::span<const CollectiveSpan> a, std::span<const CollectiveSpan> b);

// One communicator found from its calls.
struct FoundCommunicator {
  struct Member {
    uint32_t pid = 0;
    int64_t handle = 0;
    int64_t seq_shift = 0;  // the communicator's sequence of a call: its traced seq + seq_shift
  };
  std::vector<Member> members;  // by pid, then handle; at least two processes
};

// The communicators the calls form (any order; each process's calls on each handle one stream).
std::vector<FoundCommunicator> communicators_from_collectives(std::span<const CollectiveSpan> calls);

}  // namespace causeway
