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
      r.first_token ? "first token after " + format_duration_ns(first - r.start) : "no token streamed");
  if (r.first_token) add(lane, first, r.end, Mark::streaming, "streaming, " + format_duration_ns(r.end - first));
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

  SwimlaneData d;
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (const RequestSpan& r : *spans) from = std::min(from, r.start), to = std::max(to, r.end);
  const int64_t pad = std::max<int64_t>((to - from) / 20, 1'000'000);
  d.from_ns = from - pad;
  d.to_ns = to + pad;
  // The span of the tail units the chain explains, where it lies in the drawing.
  const json w = chain.value("window", json::object());
  d.focus_from = std::clamp(w.value("from_ns", from), d.from_ns, d.to_ns);
  d.focus_to = std::clamp(w.value("to_ns", to), d.focus_from, d.to_ns);
  d.focus_label = "the tail the chain explains (" + format_duration_ns(d.focus_to - d.focus_from) + ")";
  for (const RequestSpan& r : *spans) {
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
    name = (name.empty() ? "pid " + std::to_string(pid) : sanitize_untrusted(name, 48)) + " (culprit)";
    d.lanes.push_back(where_ran(*rows, pid, tid, d.from_ns, d.to_ns, std::move(name)));
  }
  return std::optional<SwimlaneData>{std::move(d)};
}

}  // namespace causeway
