// io_contention: the thread was in D state while block requests were in flight. Culprit: the
// other process with I/O in flight during most waits, else the process itself (its own I/O).
#pragma once

#include <cstdint>
#include <map>

#include "analysis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // analysis/chunk_context.h
struct Slow;
struct Ev;

struct IoContention {
  static constexpr Cause id = Cause::io_contention;
  static constexpr std::string_view name = "io_contention";
  struct Evidence {
    int64_t own_requests = 0, own_bytes = 0;  // block requests on the process's behalf (itself or a kernel worker)
    int64_t kworker_requests = 0;             // of those, issued by kernel workers (writeback, journal)
    int64_t other_requests = 0;               // by other processes, overlapping the D-state waits
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims a D-state call when block requests overlap its D intervals; false when none do.
  static bool detect(ChunkContext& cx, const Slow& w);
};

}  // namespace causeway
