// Ranks of NCCL processes whose ncclCommInitRank ran before the trace started. Their
// collectives carry the communicator handle (a pointer, different in every process) and rank
// -1. A rank is found, in this order (docs/INFERENCE.md "How ranks are found"):
//   1. the launcher's variables (RANK/WORLD_SIZE of torchrun, OMPI_COMM_WORLD_*, PMI_*,
//      SLURM_*), read by the collector from /proc/PID/environ into `processes`;
//   2. the engine's process title (diagnosis/engine_title.h): vLLM V1's multiproc executor and
//      SGLang pass the rank as a Python argument and write it into the title; the workers of
//      one engine parent with one title group are one communicator, numbered by their TP rank;
//   3. structure alone: siblings of one parent with one comm, none with a rank of its own,
//      ordered by pid. That order is not a rank: source() says "structural" and the culprit
//      says so instead of naming a rank number.
//   4. the collectives themselves (add_from_collectives, diagnosis/collective_membership.h):
//      processes still without a rank whose collectives of one op, element count and datatype
//      overlap sequence by sequence and complete together are one communicator, whatever their
//      names, parents or handles. Members are ordered by pid; that is not a rank either:
//      source() says "collective_timing".
// Ranks of one job (same job id and world size) are put in one communicator: the n-th
// communicator a process uses is the job's n-th, and the n-th collective every rank made on
// it since the trace began is the same collective (the per-handle sequence the BPF side counts).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "diagnosis/collective_membership.h"
#include "diagnosis/collectives.h"
#include "common/result.h"
#include "tracedb/records.h"

namespace causeway {

// What the collector recorded of a process that had no launcher rank.
struct ProcessFacts {
  uint32_t pid = 0, ppid = 0;
  std::string comm, cmdline;
};

// The source() of a rank numbered by structure alone (no rank of its own).
inline constexpr std::string_view kStructuralRank = "structural";
// The source() of a communicator found from its collectives' timing (no rank number).
inline constexpr std::string_view kTimingRank = "collective_timing";
// Whether a source gives a real rank number (structure and timing give only a place by pid).
inline bool rank_number_known(std::string_view source) { return source != kStructuralRank && source != kTimingRank; }

// A collective's row as communicator membership reads it.
CollectiveSpan collective_span(const CallRecord& e);

// The source() of a rank read from the engine's process title.
inline constexpr std::string_view kTitleRank = "process_title";

class RankInference {
 public:
  // (Re)reads the ranks of the session's processes: launcher ranks (none before schema 3),
  // then titles and structure for the processes without one (add_processes).
  Result<void> load(sqlite3* db, int64_t session_id);

  // Ranks from the engine's process title, then from structure, for processes that have no
  // launcher rank (see the header comment for the order).
  void add_processes(std::span<const ProcessFacts> procs);

  // Step 4: communicators of the processes that still have no rank, from their collectives
  // (any order). Call after load(); pids that already have a source are left alone. The
  // sequence shift that lined the members' calls up is kept: align() uses it instead of
  // matching return times (a starved rank returns late).
  void add_from_collectives(std::span<const CollectiveSpan> calls);
  // Step 4 as a session is read chunk by chunk (the call-level diagnosis): observe() keeps the
  // collectives with rank -1 of processes still without a rank (each once, up to
  // kObservedLimit), settle() adds the communicators they form once new ones came.
  void observe(const CollectiveSpan& c);
  void settle();
  static constexpr size_t kObservedLimit = 200000;

  // For an entry with rank -1 whose process has a launcher rank: sets rank, nranks and the
  // job communicator's id (comm). Returns whether it did. end_ns: when the call returned.
  bool resolve(CollectiveEntry& e, int64_t end_ns);

  // After the chunk's entries are resolved: shifts each rank's sequence so the n-th
  // collective is the same across ranks even when a rank was inside a collective when its
  // probes went live (its first traced call is then the next one). Ranks of a collective
  // leave it together, so a rank's calls are matched to the job's by their return times.
  void align(std::vector<CollectiveEntry>& entries);

  // The numbering decided before (fleet/ship_table.cpp: read back from the store, so every
  // ship round numbers a rank the same way): (pid, handle) is the job communicator comm, its
  // traced sequences shifted by offset. Handles of a pid are restored in the order first used.
  void restore_stream(uint32_t pid, int64_t handle, int64_t comm, int64_t offset);
  // A return time of the job's aligned collective seq on comm (this host's or another's): what
  // a stream seen for the first time is matched against instead of anchoring a numbering.
  void restore_history(int64_t comm, int64_t seq, int64_t end_ns);
  // Whether comm has return times to align a new stream against.
  bool has_history(int64_t comm) const { return history_.count(comm) && !history_.at(comm).empty(); }

  // Tests: a launcher rank without a DB.
  void set_launcher(uint32_t pid, int32_t rank, int32_t world_size, std::string source, std::string job_id);

  // Whether any process has a rank to resolve from: launcher, title or structure (else
  // resolve() never changes an entry).
  bool has_ranks() const { return !procs_.empty(); }

  // Where the rank of pid came from: the launcher variable, kTitleRank or kStructuralRank;
  // "" unless resolve() numbered one of its collectives (a traced init gave its rank).
  std::string source(uint32_t pid) const;
  // Whether pid's number is only its place by pid (kStructuralRank, kTimingRank).
  bool structural(uint32_t pid) const {
    const std::string s = source(pid);
    return !s.empty() && !rank_number_known(s);
  }
  // How text names pid's rank: "rank 1", or "worker 2 of 2 by pid order" when structural.
  std::string label(uint32_t pid, int32_t rank) const;

 private:
  struct Launcher {
    int32_t rank = -1, world_size = 0;
    std::string source, job_id;
  };
  std::unordered_map<uint32_t, Launcher> procs_;
  std::unordered_set<uint32_t> resolved_pids_;                      // pids resolve() numbered
  std::map<std::pair<uint32_t, int64_t>, int64_t> comm_of_handle_;  // (pid, handle) -> job communicator id
  std::unordered_map<uint32_t, int> handles_seen_;                  // pid -> communicators numbered so far
  using StreamKey = std::pair<uint32_t, int64_t>;                    // (pid, job communicator)
  std::map<std::pair<StreamKey, int64_t>, int64_t> pending_;         // (stream, traced seq) -> return time, this chunk
  std::map<StreamKey, int64_t> offset_;                              // aligned streams: seq shift
  std::map<int64_t, std::map<int64_t, int64_t>> history_;            // communicator -> aligned seq -> a return time
  std::map<std::tuple<uint32_t, int64_t, int64_t>, CollectiveSpan> observed_;  // (pid, handle, seq) -> call
  bool observed_new_ = false;
};

}  // namespace causeway
