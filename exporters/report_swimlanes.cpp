#include "exporters/report_swimlanes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/units.h"
#include "exporters/report_html.h"
#include "exporters/report_svg.h"

namespace causeway {
namespace {

constexpr double kLaneWidth = 1160, kLaneLabelW = 190, kLaneRight = 12, kAxisH = 34, kLaneH = 26, kLaneGap = 8;
// About the advance of one 11 px sans-serif glyph: a label is drawn inside its segment only
// when it fits.
constexpr double kCharW = 6.4;

bool light(Mark m) { return m == Mark::sleeping || m == Mark::idle || m == Mark::call || m == Mark::unknown; }

const char* lane_kind(LaneKind k) {
  switch (k) {
    case LaneKind::victim_thread: return "victim";
    case LaneKind::cpu: return "cpu";
    case LaneKind::culprit: return "culprit";
    case LaneKind::calls: return "calls";
    case LaneKind::io: return "io";
    case LaneKind::request: return "request";
  }
  return "";
}

// A tick step of 1, 2 or 5 × 10^k ns giving at most ~10 ticks.
int64_t tick_step(int64_t span) {
  double raw = static_cast<double>(span) / 10.0;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= raw) return static_cast<int64_t>(p * m);
  return static_cast<int64_t>(p * 10);
}

std::string rel_ms(int64_t ns) {
  char b[32];
  double ms = static_cast<double>(ns) / 1e6;
  std::snprintf(b, sizeof b, std::fabs(ms) < 1 ? "%+.2f ms" : std::fabs(ms) < 100 ? "%+.1f ms" : "%+.0f ms", ms);
  return ns == 0 ? std::string("0") : std::string(b);
}

// The label with the duration, else the label, else its part before " (" (a comm without its
// pid), else nothing: the first that fits.
std::string fitting(const std::string& label, const std::string& dur, double width) {
  auto fits = [&](size_t chars) { return static_cast<double>(chars) * kCharW + 8 <= width; };
  if (fits(label.size() + 1 + dur.size())) return label + " " + dur;
  if (fits(label.size())) return label;
  auto cut = label.find(" (");
  if (cut != std::string::npos && fits(cut)) return label.substr(0, cut);
  return "";
}

}  // namespace

std::string render_swimlanes(const SwimlaneData& d) {
  const double plot_w = kLaneWidth - kLaneLabelW - kLaneRight;
  const double height = kAxisH + static_cast<double>(d.lanes.size()) * (kLaneH + kLaneGap) + 4;
  const int64_t span = std::max<int64_t>(1, d.to_ns - d.from_ns);
  auto x_of = [&](int64_t t) {
    return kLaneLabelW + plot_w * static_cast<double>(std::clamp(t, d.from_ns, d.to_ns) - d.from_ns) / static_cast<double>(span);
  };
  // The label is causeway's own words only: trace text stays in elements' text, never attributes.
  Svg svg(kLaneWidth, height, "swimlanes: " + std::to_string(d.lanes.size()) + " lanes around the chain's worst moment", "swimlanes");

  // Axis: ms from the worst call's start, so "+12 ms" reads as "12 ms into the call".
  const int64_t step = tick_step(span);
  const int64_t first_tick = d.focus_from - ((d.focus_from - d.from_ns) / step) * step;
  for (int64_t t = first_tick; t <= d.to_ns; t += step) {
    double x = x_of(t);
    svg.line(x, kAxisH - 6, x, height - 2, "grid");
    svg.text(x, kAxisH - 10, rel_ms(t - d.focus_from), "ax", Anchor::middle);
  }
  const double fx1 = x_of(d.focus_from), fx2 = std::max(x_of(d.focus_to), fx1 + 1);
  svg.rect(fx1, kAxisH - 4, fx2 - fx1, height - kAxisH + 2, "focus");
  svg.text(std::min(fx1 + 3, kLaneWidth - kLaneRight - kCharW * static_cast<double>(d.focus_label.size())), 12, d.focus_label, "lane");

  std::set<Mark> used;
  double y = kAxisH;
  for (const Lane& lane : d.lanes) {
    svg.begin_group("lane", "lane", lane_kind(lane.kind));
    svg.text(kLaneLabelW - 8, y + kLaneH / 2 + 4, lane.name, "lane", Anchor::end);
    svg.rect(kLaneLabelW, y, plot_w, kLaneH, "idle");
    // Merge what is narrower than half a pixel into the segment before it when both show the
    // same thing; anything left is drawn at least 1 px wide so a short event stays visible.
    struct Px {
      double x1, x2;
      Mark mark;
      const LaneSegment* seg;
      int merged;
    };
    std::vector<Px> px;
    for (const LaneSegment& s : lane.segments) {
      if (s.to_ns < d.from_ns || s.from_ns > d.to_ns) continue;
      double x1 = x_of(s.from_ns), x2 = x_of(s.to_ns);
      if (!px.empty() && px.back().mark == s.mark && x1 - px.back().x2 < 0.5 && (x2 - x1 < 0.5 || px.back().x2 - px.back().x1 < 0.5)) {
        px.back().x2 = std::max(px.back().x2, x2);
        ++px.back().merged;
        continue;
      }
      px.push_back({x1, x2, s.mark, &s, 1});
    }
    for (const Px& p : px) {
      used.insert(p.mark);
      const double w = std::max(p.x2 - p.x1, 1.0);
      const bool tall = p.mark != Mark::call && p.mark != Mark::io;  // calls: slimmer, so nesting reads
      const double h = tall ? kLaneH : kLaneH - 8, yy = tall ? y : y + 4;
      std::string tip;
      if (w >= 2) {
        tip = p.merged > 1 ? std::to_string(p.merged) + " segments, mostly " + p.seg->label
                           : p.seg->label + ", " + format_duration_ns(p.seg->to_ns - p.seg->from_ns);
      }
      svg.rect(p.x1, yy, w, h, mark_class(p.mark), tip);
      if (p.merged == 1) {
        std::string t = fitting(p.seg->label, format_duration_ns(p.seg->to_ns - p.seg->from_ns), w);
        if (!t.empty()) svg.text(p.x1 + 4, y + kLaneH / 2 + 4, t, light(p.mark) ? "" : "in");
      }
    }
    if (lane.dropped)
      svg.text(kLaneWidth - kLaneRight, y + kLaneH / 2 + 4, "+" + std::to_string(lane.dropped) + " not drawn", "ax", Anchor::end);
    svg.end_group();
    y += kLaneH + kLaneGap;
  }
  std::string legend = "<div class=\"legend\">";
  for (Mark m : used)
    legend += std::string("<span><i class=\"") + mark_class(m) + "\"></i>" + html_escape(mark_meaning(m)) + "</span>";
  legend += "<span><i class=\"focus\"></i>" +
            html_escape(d.focus_label) + "</span></div>";
  return "<figure class=\"swimlanes\">" + svg.finish() + legend + "</figure>";
}

}  // namespace causeway
