// The data of a chain's swimlanes (docs/REPORT.md "Swimlanes"): the real sched and events rows
// around the chain's worst call — the victim thread's on-CPU / runnable / asleep / blocked
// intervals, who ran on the CPU it lost, where the culprit ran, the victim's CUDA/NCCL calls
// and the I/O of both — read from the DB in a window of a few times the call's length.
// Bounded: a lane keeps at most kMaxSegments, and report_swimlanes merges what is narrower
// than a pixel, so a 10M-event session draws the same few KiB per chain as a small one.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

// What a segment shows: the CSS class of its colour (report_html.cpp) is its name.
enum class Mark { on_cpu, runnable, sleeping, blocked, culprit, other, idle, call, slow_call, io, waiting_token, streaming, unknown };
const char* mark_class(Mark m);
const char* mark_meaning(Mark m);  // legend text

struct LaneSegment {
  int64_t from_ns = 0, to_ns = 0;
  Mark mark = Mark::unknown;
  std::string label;  // sanitized, not escaped: shown inside when it fits, and as the tooltip
};

enum class LaneKind { victim_thread, cpu, culprit, calls, io, request };

struct Lane {
  LaneKind kind = LaneKind::calls;
  std::string name;   // sanitized: "python3 tid 4821", "CPU 3", "tar (culprit)"
  std::vector<LaneSegment> segments;
  uint64_t dropped = 0;  // segments past kMaxSegments
};

struct SwimlaneData {
  int64_t from_ns = 0, to_ns = 0;            // the drawn window
  int64_t focus_from = 0, focus_to = 0;      // the worst call (or the chain's slow moment)
  std::string focus_label;                   // "cudaStreamSynchronize 41.2ms (worst call)"
  bool focus_is_call = false;                // false: the chain's timeline, no call to single out
  std::vector<Lane> lanes;
};

inline constexpr size_t kMaxSegments = 4000;

class LaneSource;
struct SchedRow;

// Nothing when the chain names no moment to draw (no claimed call, no timeline, no call of its
// op). A request-level chain is drawn by load_request_lanes.
Result<std::optional<SwimlaneData>> load_swimlanes(LaneSource& src, const nlohmann::json& chain);

// A request-level chain (docs/REPORT.md "Request chains"): around the request it slowed most
// (shaded), one lane per request it slowed there (waiting for the first token, then
// streaming), where its culprit ran and the culprit's GPU calls. Nothing when none of its
// requests is in the source.
Result<std::optional<SwimlaneData>> load_request_lanes(LaneSource& src, const nlohmann::json& chain);

// Where a process (tid 0: any of its threads) ran, on any CPU, from sched rows: one lane, each
// stretch labelled with its CPU; "not on a CPU" when it never ran in [from, to].
Lane where_ran(const std::vector<SchedRow>& rows, uint32_t pid, uint32_t tid, int64_t from, int64_t to, std::string name);

// At most this many sched / events rows read per chain.
inline constexpr int kMaxLaneRows = 200'000;

}  // namespace causeway
