// What the default mode would have stored, derived from a --record-all session: the fast calls
// the kernel only counts (bpf/calls.bpf.h `aggregated`, docs/COLLECTOR.md "Aggregated calls")
// are folded into each thread's calls_aggregated run rows, by the same rule. So one traced run
// gives both stores of the very same calls, and their answers can be compared byte for byte.
//
// The rule, per thread, at each call's return (inner calls first): a call of a fast_counted op
// (tracedb/op_recording.h) is only counted when it explains nothing — no stack (with stacks on,
// the kernel stacks exactly the calls that explain something: first at their site, at least
// their threshold, first after a host gap), a zero status, under CW_AGG_MAX_NS, no call nested
// in it recorded, its thread not switched out while it ran (a `sched` row with the thread as
// prev_tid inside the call) — and, if outermost, its thread's run is under targ_run_max_ns old. A counted
// outermost call joins the thread's run; the next recorded outermost call closes it, and the
// run is stored just before that call (here: in the row of the run's first call, so the ids
// keep their order); a run still open at the end is stored too. Needs a session traced with
// stacks (not --no-stack) and no stack-map failure (dropped_stack 0).
#pragma once

#include <cstdint>
#include <string>

namespace causeway::test {

struct FoldedCalls {
  int64_t counted = 0;  // rows folded into runs
  int64_t runs = 0;     // calls_aggregated rows written
  int64_t switched = 0; // calls kept as rows only because their thread was switched out inside
};

// Folds the session's rows in place (the DB at `db_path`, opened read-write).
FoldedCalls fold_counted_calls(const std::string& db_path, int64_t session_id);

}  // namespace causeway::test
