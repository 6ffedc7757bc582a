// One row of `events` as the diagnosis needs it: what the correlator walks and every cause
// module observes. Its args a0..a5 are read through the op table's typed views
// (tracedb/op_args.h: launch_args(e).stream, coll_args(e).comm), never by position.
#pragma once

#include <cstdint>

namespace causeway {

struct Ev {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint16_t op = 0;
  int32_t cpu = -1;
  int64_t a[6] = {0, 0, 0, 0, 0, 0};
  uint64_t stack = 0;
  int64_t end() const { return ts + dur; }
};

// The (process, op) key of per-op statistics and baselines.
inline uint64_t op_key(uint32_t pid, uint16_t op) { return (uint64_t{pid} << 16) | op; }

}  // namespace causeway
