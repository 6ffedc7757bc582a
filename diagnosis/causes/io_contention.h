// io_contention: the thread was in D state while block requests were in flight, or it issued
// block reads itself inside the call (page faults on a file-backed or swapped-out source, a
// read) and spent the time in the I/O path on-CPU. Culprit: the other process with I/O in
// flight during most waits, else the process itself (its own I/O).
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct IoContention {
  static constexpr Cause id = Cause::io_contention;
  static constexpr std::string_view name = "io_contention";
  struct Evidence {
    int64_t own_requests = 0, own_bytes = 0;  // block requests on the process's behalf (itself or a kernel worker)
    int64_t kworker_requests = 0;             // of those, issued by kernel workers (writeback, journal)
    int64_t other_requests = 0;               // by other processes, overlapping the D-state waits
    // Calls claimed because their own thread issued block requests inside them (not because
    // D time won the arbitration), and the time they spent on-CPU.
    int64_t issued_calls = 0, issued_on_cpu_ns = 0;
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims a D-state call when block requests overlap its D intervals; false when none do.
  static bool detect(ChunkContext& cx, const Slow& w);
  // Claims an outlier whose own thread issued block requests inside it: host I/O work (faulting
  // in the call's source) whether the thread waited in D or not; false when it issued none.
  static bool detect_issued(ChunkContext& cx, const Slow& w);
};

}  // namespace causeway
