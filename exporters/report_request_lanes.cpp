// A request-level chain's timeline (docs/REPORT.md "Request chains"): the requests it slowed,
// each as waiting-for-the-first-token then streaming, and where its culprit ran meanwhile.
#include <algorithm>

#include "common/sanitize.h"
#include "common/units.h"
#include "exporters/report_lanes.h"
#include "exporters/report_source.h"

namespace causeway {
namespace {

using json = nlohmann::json;

// Requests drawn per chain (the chain names at most 20): a lane each stays readable.
constexpr size_t kMaxRequestLanes = 12;

void add(Lane& lane, int64_t from, int64_t to, Mark m, std::string label) {
  if (to >= from) lane.segments.push_back({from, to, m, std::move(label)});
}

Lane request_lane(const RequestSpan& r, const std::string& tag) {
  Lane lane;
  lane.kind = LaneKind::request;
  lane.name = "req " + sanitize_untrusted(r.id, 40) + tag;
  const int64_t first = r.first_token ? std::clamp(*r.first_token, r.start, r.end) : r.end;
  add(lane, r.start, first, Mark::waiting_token,
      r.first_token ? "until the first token" : "no token streamed");
  if (r.first_token) add(lane, first, r.end, Mark::streaming, "streaming");
  return lane;
}

std::vector<std::string> ids_of(const json& j) {
  std::vector<std::string> ids;
  if (j.is_array())
    for (const auto& id : j)
      if (id.is_string() && ids.size() < kMaxRequestLanes) ids.push_back(id.get<std::string>());
  return ids;
}

}  // namespace

Result<std::optional<SwimlaneData>> load_request_lanes(LaneSource& src, const json& chain) {
  const std::vector<std::string> slowed = ids_of(chain.value("requests", json::array()));
  const json culprit = chain.contains("culprit") && chain["culprit"].is_object() ? chain["culprit"] : json::object();
  // prefill_interference's culprit is requests (the long prompts): drawn beside the victims.
  const std::vector<std::string> long_ones = ids_of(culprit.value("requests", json::array()));
  std::vector<std::string> all = slowed;
  all.insert(all.end(), long_ones.begin(), long_ones.end());
  if (all.empty()) return std::optional<SwimlaneData>{};
  auto spans = src.requests(all);
  if (!spans) return spans.error();
  if (spans->empty()) return std::optional<SwimlaneData>{};

  // Around the request the chain slowed most (its ids come most time lost first): a tail
  // spread over minutes would draw every request as a sliver. The others slowed in that
  // window, and the culprit's requests there, get lanes too.
  const RequestSpan* most = nullptr;
  for (const RequestSpan& r : *spans)
    if (!slowed.empty() && r.id == slowed.front()) most = &r;
  if (!most) most = &spans->front();
  SwimlaneData d;
  const int64_t pad = std::max<int64_t>((most->end - most->start) / 2, 1'000'000);
  d.from_ns = most->start - pad;
  d.to_ns = most->end + pad;
  d.focus_from = most->start;
  d.focus_to = most->end;
  d.focus_label = "req " + sanitize_untrusted(most->id, 40) + ", slowed most (" + format_duration_ns(most->end - most->start) + ")";
  d.focus_is_call = false;
  for (const RequestSpan& r : *spans) {
    if (r.end < d.from_ns || r.start > d.to_ns) continue;
    const bool is_long = std::find(long_ones.begin(), long_ones.end(), r.id) != long_ones.end() &&
                         std::find(slowed.begin(), slowed.end(), r.id) == slowed.end();
    d.lanes.push_back(request_lane(r, is_long ? " (culprit)" : ""));
  }
  // Where the culprit process ran (cpu_contention's hog, the engine itself for queueing); a
  // culprit on another host than these requests' has no rows here.
  const bool same_host = !culprit.contains("host") || !culprit["host"].is_string() || src.host().empty() ||
                         culprit["host"].get<std::string>() == src.host();
  if (culprit.contains("pid") && culprit["pid"].is_number_integer() && same_host) {
    const auto pid = static_cast<uint32_t>(culprit["pid"].get<int64_t>());
    const auto tid = culprit.contains("tid") && culprit["tid"].is_number_integer() ? static_cast<uint32_t>(culprit["tid"].get<int64_t>()) : 0u;
    auto rows = src.sched(d.from_ns, d.to_ns, kMaxLaneRows);
    if (!rows) return rows.error();
    std::string name = src.comm(pid, tid);
    name = name.empty() ? "pid " + std::to_string(pid) : sanitize_untrusted(name, 48);
    d.lanes.push_back(where_ran(*rows, pid, tid, d.from_ns, d.to_ns, name + " (culprit)"));
    // Its GPU work meanwhile: the engine's forward passes (a long prefill, a late all-reduce).
    auto calls = src.calls(d.from_ns - (d.to_ns - d.from_ns), d.to_ns, pid, pid, kMaxLaneRows);
    if (!calls) return calls.error();
    Lane gpu;
    gpu.kind = LaneKind::calls;
    gpu.name = name + " calls";
    for (const CallRow& c : *calls)
      if ((c.source == "cuda" || c.source == "driver" || c.source == "nccl") && c.ts + c.dur >= d.from_ns &&
          gpu.segments.size() < kMaxSegments)
        add(gpu, c.ts, c.ts + c.dur, Mark::call, sanitize_untrusted(c.op, 64));
    if (!gpu.segments.empty()) d.lanes.push_back(std::move(gpu));
  }
  return std::optional<SwimlaneData>{std::move(d)};
}

}  // namespace causeway
