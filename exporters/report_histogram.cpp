#include "exporters/report_histogram.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/sanitize.h"
#include "common/units.h"
#include "exporters/report_html.h"
#include "exporters/report_svg.h"

namespace causeway {
namespace {

constexpr double kHistW = 560, kHistH = 210, kHistLeft = 44, kHistRight = 10, kHistTop = 26, kHistBottom = 30;

std::vector<HistBin> log_bins(const LatencyHistogram& hist, uint64_t min_ns, uint64_t max_ns) {
  const double lo = static_cast<double>(std::max<uint64_t>(min_ns, 1));
  const double hi = static_cast<double>(std::max<uint64_t>(max_ns, min_ns + 1)) + 1;
  const double octaves = std::max(std::log2(hi / lo), 1.0);
  const int per_octave = std::clamp(static_cast<int>(kMaxBins / octaves), 1, 8);
  const int n = std::min(kMaxBins, static_cast<int>(std::ceil(octaves * per_octave)));
  std::vector<HistBin> bins;
  for (int i = 0; i < n; ++i) {
    HistBin b;
    b.lo = static_cast<uint64_t>(lo * std::exp2(static_cast<double>(i) / per_octave));
    b.hi = i + 1 == n ? UINT64_MAX : static_cast<uint64_t>(lo * std::exp2(static_cast<double>(i + 1) / per_octave));
    if (!bins.empty() && b.lo <= bins.back().lo) continue;  // sub-ns widths at the bottom collapse
    bins.push_back(b);
  }
  if (bins.empty()) bins.push_back({0, UINT64_MAX, 0, {}});
  bins.front().lo = 0;
  // Counts telescope: [lo, hi) = (≥ lo) − (≥ hi), whole histogram buckets on both sides.
  for (size_t i = 0; i < bins.size(); ++i) {
    uint64_t above_lo = hist.at_or_above(bins[i].lo, max_ns).count;
    uint64_t above_hi = i + 1 < bins.size() ? hist.at_or_above(bins[i + 1].lo, max_ns).count : 0;
    bins[i].count = above_lo > above_hi ? above_lo - above_hi : 0;
    if (i + 1 < bins.size()) bins[i].hi = bins[i + 1].lo;
  }
  return bins;
}

size_t bin_of(const std::vector<HistBin>& bins, uint64_t v) {
  auto it = std::upper_bound(bins.begin(), bins.end(), v, [](uint64_t x, const HistBin& b) { return x < b.lo; });
  return it == bins.begin() ? 0 : static_cast<size_t>(it - bins.begin() - 1);
}

// The bin a call of duration v was counted in: bins take whole histogram buckets (the one
// holding a bin's low edge belongs to that bin), so a value just under an edge counts above it.
size_t counted_bin_of(const std::vector<HistBin>& bins, uint64_t v) {
  const uint32_t b = LatencyHistogram::bucket_of(v);
  size_t i = bin_of(bins, v);
  while (i + 1 < bins.size() && LatencyHistogram::bucket_of(bins[i + 1].lo) <= b) ++i;
  return i;
}

void add_claims(const std::vector<TailClaim>& claims, OpHistogram& h) {
  for (const TailClaim& c : claims) {
    if (c.dur_ns < h.threshold) continue;
    ++h.bins[counted_bin_of(h.bins, c.dur_ns)].causes[c.cause];
  }
  // Exact durations against bucket-rounded bins: never colour more calls than a bin holds.
  for (HistBin& b : h.bins) {
    uint64_t sum = 0;
    for (auto& [c, n] : b.causes) {
      n = std::min(n, b.count - std::min(sum, b.count));
      sum += n;
    }
  }
}

std::string dur_label(uint64_t ns) { return format_duration_ns(static_cast<int64_t>(ns)); }

}  // namespace

OpHistogram build_op_histogram(const OpStats& op, const TailOp* tail, const std::vector<TailClaim>& claims,
                               const std::string& host) {
  OpHistogram h;
  h.title = sanitize_untrusted(op.op, 80) + " — " + sanitize_untrusted(op.comm.empty() ? "?" : op.comm, 48) + " (pid " +
            std::to_string(op.pid) + (host.empty() ? "" : " on " + sanitize_untrusted(host, 80)) + ")";
  h.source = op.source;
  h.calls = op.count;
  h.p50 = op.p50_ns;
  h.p99 = op.p99_ns;
  h.min = op.min_ns;
  h.max = op.max_ns;
  h.bins = log_bins(op.hist, op.min_ns, op.max_ns);
  if (tail && tail->tail_calls > 0) {
    h.threshold = tail->threshold_ns;
    h.tail_causes = tail->causes;
    h.tail_calls = tail->tail_calls;
    h.tail_ns = tail->tail_ns;
    h.unexplained_ns = tail->unexplained_ns;
    add_claims(claims, h);
  }
  return h;
}

std::string render_op_histogram(const OpHistogram& h) {
  const double pw = kHistW - kHistLeft - kHistRight, ph = kHistH - kHistTop - kHistBottom;
  const double bw = pw / static_cast<double>(h.bins.size());
  uint64_t top = 1;
  for (const auto& b : h.bins) top = std::max(top, b.count);
  // Heights on a log scale: the tail's few calls would be invisible next to the median's
  // thousands on a linear one.
  auto height_of = [&](uint64_t n) {
    return n == 0 ? 0.0 : ph * std::log10(1.0 + static_cast<double>(n)) / std::log10(1.0 + static_cast<double>(top));
  };
  auto x_of_value = [&](uint64_t v) {
    size_t i = bin_of(h.bins, v);
    const HistBin& b = h.bins[i];
    double hi = b.hi == UINT64_MAX ? static_cast<double>(std::max(h.max, b.lo + 1)) : static_cast<double>(b.hi);
    double lo = std::max(static_cast<double>(b.lo), 1.0);
    double frac = hi > lo && v > lo ? std::log(static_cast<double>(v) / lo) / std::log(hi / lo) : 0.0;
    return kHistLeft + bw * (static_cast<double>(i) + std::clamp(frac, 0.0, 1.0));
  };
  Svg svg(kHistW, kHistH, "latency histogram, log bins, tail coloured by cause", "histogram");
  svg.line(kHistLeft, kHistTop + ph, kHistLeft + pw, kHistTop + ph, "axis");
  svg.text(kHistLeft - 4, kHistTop + 8, std::to_string(top), "ax", Anchor::end);
  svg.text(kHistLeft - 4, kHistTop + ph, "0", "ax", Anchor::end);
  svg.text(4, kHistTop + ph + 27, "calls, log scale", "ax");
  std::set<std::string> causes_seen;
  bool unexplained_seen = false;
  for (size_t i = 0; i < h.bins.size(); ++i) {
    const HistBin& b = h.bins[i];
    if (b.count == 0) continue;
    const double x = kHistLeft + bw * static_cast<double>(i) + 0.5, w = std::max(bw - 1, 1.0);
    const double full = height_of(b.count);
    double y = kHistTop + ph;
    const std::string range = dur_label(b.lo) + (b.hi == UINT64_MAX ? "+" : " – " + dur_label(b.hi));
    const bool in_tail = h.threshold && b.lo >= h.threshold;
    // Stacked from the bottom: each cause's share of the bin, then the rest.
    uint64_t claimed = 0;
    for (const auto& [cause, n] : b.causes) {
      if (n == 0) continue;
      double seg = full * static_cast<double>(n) / static_cast<double>(b.count);
      y -= seg;
      svg.rect(x, y, w, seg, cause_class(cause), range + ": " + std::to_string(n) + " calls, " + sanitize_untrusted(cause, 40));
      causes_seen.insert(cause);
      claimed += n;
    }
    if (claimed < b.count) {
      double seg = full - (kHistTop + ph - y);
      y -= seg;
      svg.rect(x, y, w, seg, in_tail ? "unexplained" : "bar",
               range + ": " + std::to_string(b.count - claimed) + " calls" + (in_tail ? ", no cause found" : ""));
      unexplained_seen = unexplained_seen || in_tail;
    }
  }
  // X axis: each power of ten the bins span.
  const uint64_t lo_v = std::max<uint64_t>(h.min, 1);
  const uint64_t hi_v = std::max(h.max, lo_v);
  for (uint64_t p = 1; p <= hi_v && p < UINT64_MAX / 10; p *= 10) {
    if (p < lo_v) continue;
    double x = x_of_value(p);
    svg.line(x, kHistTop + ph, x, kHistTop + ph + 4, "axis");
    svg.text(x, kHistTop + ph + 15, dur_label(p), "ax", Anchor::middle);
  }
  auto marker = [&](uint64_t v, const char* cls, const std::string& name, double label_y) {
    double x = x_of_value(v);
    svg.line(x, kHistTop - 2, x, kHistTop + ph, cls);
    // Near the right edge the label goes left of its line, so it is not cut off.
    const bool left = x > kHistW - 80;
    svg.text(left ? x - 3 : x + 3, label_y, name + " " + dur_label(v), "ax", left ? Anchor::end : Anchor::start);
  };
  marker(h.p50, "p50", "p50", kHistTop - 14);
  marker(h.p99, "p99", "p99", kHistTop - 3);
  svg.text(kHistLeft + pw, kHistTop + ph + 27, "max " + dur_label(h.max), "ax", Anchor::end);

  std::string cap = "<figcaption><b>" + html_escape(h.title) + "</b> <span class=\"note\">" + html_escape(h.source) +
                    "</span><br>" + std::to_string(h.calls) + " calls · p50 " + html_escape(dur_label(h.p50)) + " · p99 " +
                    html_escape(dur_label(h.p99)) + " · max " + html_escape(dur_label(h.max));
  if (h.threshold) {
    cap += "<br>tail (≥ " + html_escape(dur_label(h.threshold)) + ", " + std::to_string(h.tail_calls) + " calls): ";
    bool first = true;
    for (const TailCause& c : h.tail_causes) {
      cap += std::string(first ? "" : ", ") + html_text(c.cause, 40) + " " +
             std::to_string(static_cast<int>(std::lround(h.tail_ns > 0 ? 100.0 * c.time_ns / h.tail_ns : 0))) + "%";
      first = false;
    }
    cap += std::string(first ? "" : ", ") + "unexplained " +
           std::to_string(static_cast<int>(std::lround(h.tail_ns > 0 ? 100.0 * h.unexplained_ns / h.tail_ns : 0))) +
           "% of the tail's time";
  }
  cap += "</figcaption>";
  std::string legend = "<div class=\"legend\"><span><i class=\"bar\"></i>calls</span>";
  for (const auto& c : causes_seen)
    legend += std::string("<span><i class=\"") + cause_class(c) + "\"></i>" + html_text(c, 40) + "</span>";
  if (unexplained_seen) legend += "<span><i class=\"unexplained\"></i>tail, no cause found</span>";
  legend += "</div>";
  return "<figure class=\"op\">" + cap + svg.finish() + legend + "</figure>";
}

}  // namespace causeway
