#include "exporters/report_request_latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "diagnosis/chain_text.h"
#include "exporters/report_html.h"
#include "exporters/report_svg.h"

namespace causeway {
namespace {

using json = nlohmann::json;

constexpr double kLatW = 1160, kLatLabelW = 90, kLatRight = 20;
constexpr double kLatTop = 24;              // the axis labels above the first row
constexpr double kLatLabelRowH = 11;        // one row of marker labels (10 px text)
constexpr int kLatLabelRows = 4;            // p50, p90, p99, max: each can have its own row
constexpr double kLatPlotH = 56, kLatGap = 10;
constexpr double kLatRowH = kLatLabelRows * kLatLabelRowH + kLatPlotH + kLatGap;
constexpr int kLatBins = 60;
// The marker labels' text is 10 px (report_html.cpp `svg text.ax`); a wide sans-serif digit is
// about 0.64 em, so 6.5 px a character over-estimates a little, which only spreads them more.
constexpr double kLatCharW = 6.5, kLatLabelGap = 6;

double lat_num(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
}


struct LatMetric {
  const char* name;   // ttft | itl | e2e (the tail's metric names)
  const char* key;    // its object in the document
  const char* title;  // the row's label
  const std::vector<double>* samples;
};

}  // namespace

std::string latency_ms_text(double v) {
  if (!std::isfinite(v)) return "–";
  char b[32];
  std::snprintf(b, sizeof b, v < 10 ? "%.2f ms" : v < 1000 ? "%.1f ms" : "%.2f s", v < 1000 ? v : v / 1000);
  return b;
}

std::vector<LabelSlot> place_labels(const std::vector<std::pair<double, size_t>>& labels, double width) {
  std::vector<LabelSlot> out;
  for (const auto& [x, chars] : labels) {
    LabelSlot s;
    const double w = kLatCharW * static_cast<double>(chars);
    // Right of its line, or left of it where it would run past the edge.
    s.end_anchor = x + 3 + w > width - 2;
    s.x0 = s.end_anchor ? x - 3 - w : x + 3;
    s.x1 = s.x0 + w;
    int row = 0;
    for (;; ++row) {
      bool clear = true;
      for (const LabelSlot& o : out)
        if (o.row == row && s.x0 < o.x1 + kLatLabelGap && o.x0 < s.x1 + kLatLabelGap) clear = false;
      if (clear) break;
    }
    s.row = row;
    out.push_back(s);
  }
  return out;
}

namespace {

// The shared log-scale axis of the three rows.
struct LatAxis {
  double lo = 0, hi = 0, pw = 0;
  double x_of(double v) const { return kLatLabelW + pw * std::log10(std::clamp(v, lo, hi) / lo) / std::log10(hi / lo); }
};

// How a metric's tail is coloured: by the causes' shares of the analysed metric's tail.
struct LatTail {
  bool analysed = false;
  const json& causes;
  void stack(Svg& svg, double x, double top, double w, double h, const std::string& what) const {
    // Each cause's share of the tail's time, bottom up, then the rest unexplained.
    double yy = top + h, left = h;
    if (analysed)
      for (const auto& c : causes) {
        const double share = std::clamp(lat_num(c, "share_time"), 0.0, 1.0);
        if (!std::isfinite(share) || share <= 0) continue;
        const std::string cause = c.contains("cause") && c["cause"].is_string() ? c["cause"].get<std::string>() : "?";
        const double seg = std::min(h * share, left);
        yy -= seg;
        left -= seg;
        svg.rect(x, yy, w, seg, cause_class(cause), cause + " " + percent_text(share) + " of the tail's time — " + what);
      }
    if (left > 0) svg.rect(x, top, w, left, analysed ? "unexplained" : "tail", what + (analysed ? ", no cause found" : ""));
  }
};

// A metric's histogram: log-spaced bins over the shared axis, heights on a log scale (a tail of a
// few requests beside thousands at the median stays visible), the tail part of each bin coloured.
void draw_lat_bins(Svg& svg, const LatAxis& ax, const LatMetric& m, bool gaps, double threshold, double base,
                   const LatTail& tail) {
  const double lo = ax.lo, hi = ax.hi, pw = ax.pw;
  // Log-spaced bins over the shared axis; heights on a log scale (a tail of a few requests
  // beside thousands at the median stays visible).
  std::vector<uint64_t> bins(kLatBins, 0), in_tail(kLatBins, 0);  // all values; those ≥ the threshold
  for (double v : *m.samples) {
    if (!std::isfinite(v) || v <= 0) continue;
    const double f = std::log10(std::clamp(v, lo, hi) / lo) / std::log10(hi / lo);
    const size_t i = std::min<size_t>(kLatBins - 1, static_cast<size_t>(f * kLatBins));
    ++bins[i];
    if (std::isfinite(threshold) && v >= threshold) ++in_tail[i];
  }
  const uint64_t top = std::max<uint64_t>(1, std::ranges::max(bins));
  const double bw = pw / kLatBins;
  for (int i = 0; i < kLatBins; ++i) {
    if (bins[i] == 0) continue;
    const double from = lo * std::pow(hi / lo, static_cast<double>(i) / kLatBins);
    const double to = lo * std::pow(hi / lo, static_cast<double>(i + 1) / kLatBins);
    const double h = kLatPlotH * std::log10(1.0 + static_cast<double>(bins[i])) / std::log10(1.0 + static_cast<double>(top));
    const double x = kLatLabelW + bw * i + 0.5, w = std::max(bw - 1, 1.0);
    const std::string what = std::string(m.title) + " " + latency_ms_text(from) + " – " + latency_ms_text(to) + ": " + std::to_string(bins[i]) +
                             (gaps ? " gaps" : " requests");
    // The bin's values below the tail at the bottom, its tail values stacked above them.
    const double tail_h = h * static_cast<double>(in_tail[i]) / static_cast<double>(bins[i]);
    if (tail_h < h) svg.rect(x, base - h + tail_h, w, h - tail_h, "bar", what);
    if (tail_h > 0) tail.stack(svg, x, base - h, w, tail_h, what + " (" + std::to_string(in_tail[i]) + " in the tail)");
  }
}

// The p50, p90, p99 and max markers, and their labels in rows above the plot that never overlap.
void draw_lat_marks(Svg& svg, const LatAxis& ax, const json& pct, double plot_top, double base) {
  const double p50 = lat_num(pct, "p50"), p90 = lat_num(pct, "p90"), p99 = lat_num(pct, "p99"), mx = lat_num(pct, "max");
  // The markers, and their labels in rows above the plot that never overlap.
  std::vector<std::pair<const char*, double>> marks;
  for (auto [q, v] : {std::pair{"p50", p50}, {"p90", p90}, {"p99", p99}, {"max", mx}})
    if (std::isfinite(v)) marks.push_back({q, v});
  std::vector<std::pair<double, size_t>> boxes;
  std::vector<std::string> texts;
  for (auto& [q, v] : marks) {
    texts.push_back(std::string(q) + " " + latency_ms_text(v));
    boxes.push_back({ax.x_of(v), texts.back().size()});  // ASCII: digits, "ms", "p99"
  }
  const std::vector<LabelSlot> slots = place_labels(boxes, kLatW);
  for (size_t i = 0; i < marks.size(); ++i) {
    const double x = ax.x_of(marks[i].second);
    const double label_y = plot_top - 2 - kLatLabelRowH * std::min(slots[i].row, kLatLabelRows - 1);
    svg.line(x, label_y + 1, x, base, std::string(marks[i].first) == "p50" ? "p50" : "p99");
    svg.text(slots[i].end_anchor ? x - 3 : x + 3, label_y, texts[i], "ax", slots[i].end_anchor ? Anchor::end : Anchor::start);
  }
}

}  // namespace

std::string render_request_latency(const json& r, const RequestSamples& samples) {
  const LatMetric metrics[] = {{"ttft", "ttft_ms", "TTFT", &samples.ttft_ms},
                               {"itl", "itl_ms", "ITL", &samples.itl_ms},
                               {"e2e", "e2e_ms", "E2E", &samples.e2e_ms}};
  double lo = INFINITY, hi = 0;
  auto widen = [&](double v) {
    if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  for (const LatMetric& m : metrics) {
    if (r.contains(m.key))
      for (const char* q : {"p50", "p90", "p99", "max"}) widen(lat_num(r[m.key], q));
    for (double v : *m.samples) widen(v);
  }
  if (!(hi > 0)) return "<p class=\"note\">No latency percentiles in the requests data.</p>";
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi * 1.0001)));
  const double pw = kLatW - kLatLabelW - kLatRight;
  const LatAxis axis{lo, hi, pw};
  auto x_of = [&axis](double v) { return axis.x_of(v); };
  const json tail = r.contains("tail") && r["tail"].is_object() ? r["tail"] : json::object();
  const std::string tail_metric = tail.contains("metric") && tail["metric"].is_string() ? tail["metric"].get<std::string>() : "ttft";
  const json tail_causes = tail.contains("causes") && tail["causes"].is_array() ? tail["causes"] : json::array();

  const double height = kLatTop + 3 * kLatRowH;
  Svg svg(kLatW, height, "request latency histograms (ms, log scale), tail coloured by cause", "requests");
  for (double d = lo; d <= hi * 1.0001; d *= 10) {
    svg.line(x_of(d), 16, x_of(d), height - kLatGap, "grid");
    svg.text(x_of(d), 12, latency_ms_text(d), "ax", Anchor::middle);
  }
  double y = kLatTop;
  for (const LatMetric& m : metrics) {
    svg.begin_group("metric", "metric", m.name);
    const double plot_top = y + kLatLabelRows * kLatLabelRowH, base = plot_top + kLatPlotH;
    svg.text(kLatLabelW - 8, plot_top + kLatPlotH / 2 + 4, m.title, "lane", Anchor::end);
    svg.line(kLatLabelW, base, kLatLabelW + pw, base, "axis");
    const json pct = r.contains(m.key) && r[m.key].is_object() ? r[m.key] : json::object();
    const double p50 = lat_num(pct, "p50"), p99 = lat_num(pct, "p99"), mx = lat_num(pct, "max");
    // The tail this metric's colours start at: the analysed metric's threshold, else its p99.
    const bool analysed = tail_metric == m.name;
    const double threshold = analysed && std::isfinite(lat_num(tail, "threshold_ms")) ? lat_num(tail, "threshold_ms") : p99;
    const LatTail colour{analysed, tail_causes};
    if (!m.samples->empty()) {
      draw_lat_bins(svg, axis, m, m.samples == &samples.itl_ms, threshold, base, colour);
    } else if (std::isfinite(p50) && std::isfinite(p99)) {
      // Only the percentiles: the p50 → p99 range, the tail band (p99 → max) after it.
      const double top = plot_top + 8, h = kLatPlotH - 16;
      svg.rect(x_of(p50), top, std::max(x_of(p99) - x_of(p50), 1.0), h, "bar",
               std::string(m.name) + " p50 " + latency_ms_text(p50) + " → p99 " + latency_ms_text(p99));
      if (std::isfinite(mx) && mx > p99)
        colour.stack(svg, x_of(p99), top, std::max(x_of(mx) - x_of(p99), 1.0), h, std::string(m.name) + " tail up to max " + latency_ms_text(mx));
    }
    draw_lat_marks(svg, axis, pct, plot_top, base);
    svg.end_group();
    y += kLatRowH;
  }
  std::string legend = "<div class=\"legend\"><span><i class=\"bar\"></i>requests (ITL: token gaps)</span>";
  for (const auto& c : tail_causes) {
    const std::string cause = c.contains("cause") && c["cause"].is_string() ? c["cause"].get<std::string>() : "?";
    legend += std::string("<span><i class=\"") + cause_class(cause) + "\"></i>" + html_text(cause, 40) + "</span>";
  }
  legend += "<span><i class=\"unexplained\"></i>" + html_text(tail_metric, 8) +
            " tail, no cause found</span><span><i class=\"tail\"></i>tail of the other metrics (not analysed)</span></div>";
  return "<figure class=\"requests\">" + svg.finish() + legend + "</figure>";
}

}  // namespace causeway
