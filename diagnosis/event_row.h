// One row of `events` as the diagnosis needs it: what the correlator walks and every cause
// module observes. Its args a0..a5 are read through the op table's typed views
// (tracedb/op_args.h: launch_args(e).stream, coll_args(e).comm), never by position.
//
// Why not tracedb/records.h's CallRecord, the one definition of a call everywhere else (the
// writer, the readers of tracedb/event_row.h, the request causes): the correlator holds windows
// of millions of these and reads only what a cause looks at. Ev leaves out `ret` and
// `cgroup_id` (88 bytes a row, CallRecord 104) and is filled column by column from the one
// column list (diagnosis/correlator.cpp decode_event_row, which decodes only the args the op
// has). The same typed views read both.
#pragma once

#include <cstdint>

#include "tracedb/records.h"

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
static_assert(sizeof(Ev) < sizeof(CallRecord), "Ev is the correlator's compact view of a CallRecord row");

// The (process, op) key of per-op statistics and baselines.
inline uint64_t op_key(uint32_t pid, uint16_t op) { return (uint64_t{pid} << 16) | op; }

}  // namespace causeway
