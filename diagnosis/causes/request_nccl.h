// `nccl_straggler` keyed to requests: a tensor-parallel rank entered the forward pass's
// collective late, so the other ranks (and every running request's next token) waited for
// it (docs/INFERENCE.md "Causes keyed to requests"). Read from the engine's traced NCCL
// collectives, matched across ranks as the correlator matches them (diagnosis/collectives.h).
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/collectives.h"
#include "diagnosis/rank_inference.h"
#include "diagnosis/request_cpu_waits.h"

namespace causeway::requests {

// nccl_straggler: a tensor-parallel rank entered the pass's collective late.
struct NcclStragglerRequestCause {
  static constexpr RequestCause id = RequestCause::nccl_straggler;
  static constexpr std::string_view name = "nccl_straggler";
  static constexpr ClaimTier tier = ClaimTier::engine_work;
  static const char* recommendation(const Culprit& culprit);
  // The finder of the class below, made at the first slow part and kept (its reading is cached).
  struct State;
  static void find(State& st, RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
  // The late rank's phrase and communicator source as an evidence line (nccl_rank_evidence).
  static RequestChainWords chain_words(const Culprit& culprit);
};

// [from, to]: the slow part of a request; pids: the engine's processes (the server and its
// children). A claim when collectives of those processes had a straggler (the last rank
// entered ≥ 1 ms after the second-last) during it: the time between the second-last rank's
// entry and the straggler's, covered; culprit {"pid", "comm", "rank", "nranks", "rank_source",
// "share"} of the rank that was late for the most of that time.
//
// A communicator formed before the trace carries a per-process handle and rank -1: those
// ranks are resolved as the correlator and `causeway ship` resolve them
// (diagnosis/rank_inference.h: the launcher's RANK / WORLD_SIZE read from the environment,
// else the engine's process title, else the workers' order under their parent), over the
// session's collectives from its first one (a handle's communicator is numbered by first use,
// a rank's sequence aligned on its first calls), read once and kept. rank_source says which;
// a "structural" culprit has no "rank": its place by pid is not one.
// How a culprit names the late rank: "rank 1 of 2" when a source gives rank numbers, else
// "rank unknown" (a communicator found by structure or by its collectives' return times knows
// which process was late, not its number). "" for a culprit without a rank source.
std::string nccl_rank_phrase(bool has_rank_source, std::optional<int64_t> rank, int64_t nranks);
// The chain's evidence line for the late rank: its phrase and where the communicator came from.
std::string nccl_rank_evidence(const Culprit& culprit);

class NcclStragglers {
 public:
  NcclStragglers(sqlite3* db, int64_t session_id) : db_(db), session_id_(session_id) {}
  // Appends its claims on [from, to] to out: nccl_straggler for late ranks that ran late, and
  // cpu_contention (culprit + "victim": the late rank) for those late for want of a CPU.
  void claim(RequestEvidence& ev, const std::vector<uint32_t>& pids, int64_t from, int64_t to, std::vector<CauseClaim>& out);

 private:
  bool late_for_cpu(RequestEvidence& ev, const std::vector<uint32_t>& pids, const CollectiveEntry& late, int64_t lateness_ns,
                    CpuStolen& stolen);
  std::vector<CollectiveEntry> window(const std::vector<uint32_t>& pids, int64_t from, int64_t to);
  struct Resolved {
    std::vector<CollectiveEntry> entries;  // by entry time
    RankInference ranks;                   // where each process's rank came from
  };
  const Resolved& resolved(const std::vector<uint32_t>& pids);

  sqlite3* db_;
  int64_t session_id_;
  std::map<std::vector<uint32_t>, Resolved> resolved_;  // by engine
};

struct NcclStragglerRequestCause::State {
  std::unique_ptr<NcclStragglers> stragglers;
};

}  // namespace causeway::requests
