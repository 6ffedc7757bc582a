// Which probed calls leave the kernel as their own record: the `recording` column of the op
// table, kept in tracedb/op_catalog.cpp next to kCatalog (docs/COLLECTOR.md "Aggregated calls").
// The BPF side reads it from each probe's attach cookie (bit 56, collector/probe_table.cpp).
#pragma once

#include <cstdint>

namespace causeway {

enum class CallRecording : uint8_t {
  every_call,    // each call matters (syncs, copies, collectives, graphs, memory): always recorded
  fast_counted,  // a fast call is counted in the kernel (count, histogram, errors); recorded only when
                 // it can explain something: slow, failed, first at its site, first after a host gap
};

// every_call for an op the table does not list.
CallRecording op_recording(uint16_t op);
inline bool is_fast_counted_op(uint16_t op) { return op_recording(op) == CallRecording::fast_counted; }

}  // namespace causeway
