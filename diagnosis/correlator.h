// The correlator: turns a session's calls, sched switches, wakeups and host events into
// causal chains that name the culprit (docs/ARCHITECTURE.md §7, docs/DIAGNOSIS.md).
//
// It reads committed data through a read-only connection in time chunks (the ts indexes;
// never a whole table in memory), keeps a sliding robust baseline per (process, op), and
// accumulates chains across chunks so the same chain (same id) is updated, not duplicated:
// after a demo or an import, diagnose_session() runs it over the whole session; during a
// live trace, LiveCorrelator::poll() runs it on what was committed since the last poll.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/correlator_options.h"
#include "common/result.h"
#include "tracedb/records.h"

namespace causeway {

struct CorrelatorState;  // diagnosis/correlator_internal.h
struct CauseStates;      // diagnosis/causes/registry.h

class Correlator {
 public:
  explicit Correlator(int64_t session_id, CorrelatorOptions options = {});
  ~Correlator();
  Correlator(const Correlator&) = delete;
  Correlator& operator=(const Correlator&) = delete;

  // Analyzes the calls that start in [from_ns, to_ns). Successive calls must move forward
  // (from_ns at or after the previous to_ns); data before from_ns is only context.
  Result<void> analyze(sqlite3* db, int64_t from_ns, int64_t to_ns);

  // Chains over everything analyzed so far, most severe first. Ids are stable: the same
  // (session, cause, victim, op) keeps its id as more data is analyzed.
  Result<std::vector<ChainRecord>> chains(sqlite3* db);

  // Host context (sched, wakeups, block I/O, faults, network records) is stored up to ns, or
  // lost and counted (docs/DIAGNOSIS.md "The watermark rule"). Default: unbounded (a finished
  // session). Context is read only up to it, and a call ending after it is never gpu_wait.
  void set_host_context_to(int64_t ns);

  // A chain a live trace has stored: later chains() keep rendering it (see State::published).
  void mark_published(const std::string& chain_id);

  // The slow calls claimed by a cause since the last take (the call_causes table): each claim
  // is handed out once.
  std::vector<CallCauseRecord> take_call_causes();

  int64_t analyzed_to() const;
  const CorrelatorCounters& counters() const;

  using State = CorrelatorState;

 private:
  std::unique_ptr<State> s_;
  std::unique_ptr<CauseStates> causes_;  // every cause module's accumulator, fed by the walk
};

// Whole-session diagnosis (after a demo or an import): window defaults to the session's data.
// `call_causes` (may be null) receives the slow calls each cause claimed.
Result<std::vector<ChainRecord>> diagnose_session(sqlite3* read_only_db, int64_t session_id,
                                                  std::optional<int64_t> from_ns = std::nullopt,
                                                  std::optional<int64_t> to_ns = std::nullopt,
                                                  const CorrelatorOptions& options = {},
                                                  std::vector<CallCauseRecord>* call_causes = nullptr);

// Opens db_path read-only, diagnoses the session (default: the latest), then replaces that
// session's chains and call causes in the DB (tracedb/chain_store.h). Returns the number of
// chains stored.
Result<size_t> diagnose_and_store(const std::string& db_path, std::optional<int64_t> session_id = std::nullopt,
                                  const CorrelatorOptions& options = {});

// Incremental diagnosis during `causeway trace`: call poll() every few seconds with a
// read-only connection to the DB being written; it analyzes what was committed since the
// last poll (up to the newest event minus `lag_ns`, so calls still in flight or in the
// writer's queue are not cut off, and never past the collector's host-context watermark,
// docs/DIAGNOSIS.md "The watermark rule") and returns the chains that are new or changed —
// push each to StoreWriter::push_meta (chains are INSERT OR REPLACE by id). finish()
// analyzes the rest at the end of the trace, once the collector has stored its last records
// and the final watermark.
class LiveCorrelator {
 public:
  LiveCorrelator(int64_t session_id, int64_t session_start_ns, CorrelatorOptions options = {},
                 int64_t lag_ns = 3'000'000'000);
  Result<std::vector<ChainRecord>> poll(sqlite3* read_only_db);
  Result<std::vector<ChainRecord>> finish(sqlite3* read_only_db);
  std::vector<CallCauseRecord> take_call_causes() { return correlator_.take_call_causes(); }
  const Correlator& correlator() const { return correlator_; }

 private:
  Result<std::vector<ChainRecord>> emit_changed(sqlite3* db);
  Correlator correlator_;
  int64_t session_id_;
  int64_t next_from_ns_;
  int64_t lag_ns_;
  std::vector<std::pair<std::string, size_t>> emitted_;  // chain id, hash of its last doc
};

}  // namespace causeway
