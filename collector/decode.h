// Ring-buffer records → the writer's records. Pure functions (no BPF, no I/O): unit-tested.
// Timestamps stay CLOCK_MONOTONIC here; the session adds the realtime offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "bpf/events.h"
#include "tracedb/records.h"

namespace causeway::collector {

// Kind of the record at data (nullopt when too short to hold a header).
std::optional<uint8_t> record_kind(const void* data, size_t size);

// a0..a5 per tracedb/op_catalog.cpp from the raw registers/extra words of a call.
std::array<int64_t, 6> decode_call_args(const cw_call_event& e);
CallRecord decode_call(const cw_call_event& e);
// A thread's run of calls counted in the kernel as its calls_aggregated row (op
// CW_OP_CALLS_AGGREGATED: a0 calls, a1 their ns, a2 the op; ts/dur from the first start to the
// last return). The run a recorded call carries (run_* fields), or one still open at stop.
cw_run run_of(const cw_call_event& e);
CallRecord decode_run(const cw_run& r);
// A process's page allocations since the last drain (the kernel's page_agg map) as one
// page_alloc point event (a0 pages, a1 the largest order); ts_ns is the caller's.
CallRecord decode_page_agg(uint32_t pid, const cw_page_agg& agg);
SwitchRecord decode_switch(const cw_switch_event& e);
WakeupRecord decode_wakeup(const cw_wakeup_event& e);
CallRecord decode_host(const cw_host_event& e);
// exec / fork / exit as a point event of the (parent for fork) process.
CallRecord decode_proc(const cw_proc_event& e);

// Grid/block packing of the `ops` args: x | y << 21 | z << 42 (each clamped to 21 bits).
int64_t pack_dim3(uint64_t x, uint64_t y, uint64_t z);

// A fixed-size comm field as a string (stops at the first NUL).
std::string comm_string(const char (&comm)[16]);

}  // namespace causeway::collector
