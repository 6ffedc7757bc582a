#include "exporters/report_svg.h"

#include <cmath>
#include <cstdio>

#include "diagnosis/cause_lookup.h"
#include "exporters/report_html.h"

namespace causeway {

std::string svg_num(double v) {
  if (!std::isfinite(v)) v = 0;
  char b[32];
  double r = std::round(v * 10) / 10;
  if (r == std::floor(r)) std::snprintf(b, sizeof b, "%.0f", r);
  else std::snprintf(b, sizeof b, "%.1f", r);
  return b;
}

Svg::Svg(double width, double height, std::string_view label, std::string_view css_class) : width_(width) {
  out_ += "<svg viewBox=\"0 0 " + svg_num(width) + " " + svg_num(height) + "\" width=\"" + svg_num(width) +
          "\" height=\"" + svg_num(height) + "\" role=\"img\" aria-label=\"" + html_escape(label) + "\"";
  if (!css_class.empty()) out_ += " class=\"" + html_escape(css_class) + "\"";
  out_ += ">";
}

void Svg::rect(double x, double y, double w, double h, std::string_view css_class, std::string_view tooltip) {
  out_ += "<rect x=\"" + svg_num(x) + "\" y=\"" + svg_num(y) + "\" width=\"" + svg_num(w) + "\" height=\"" + svg_num(h) +
          "\" class=\"" + html_escape(css_class) + "\"";
  if (tooltip.empty()) {
    out_ += "/>";
    return;
  }
  out_ += "><title>" + html_escape(tooltip) + "</title></rect>";
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view css_class) {
  out_ += "<line x1=\"" + svg_num(x1) + "\" y1=\"" + svg_num(y1) + "\" x2=\"" + svg_num(x2) + "\" y2=\"" + svg_num(y2) +
          "\" class=\"" + html_escape(css_class) + "\"/>";
}

void Svg::text(double x, double y, std::string_view plain, std::string_view css_class, Anchor anchor) {
  out_ += "<text x=\"" + svg_num(x) + "\" y=\"" + svg_num(y) + "\"";
  if (!css_class.empty()) out_ += " class=\"" + html_escape(css_class) + "\"";
  if (anchor == Anchor::middle) out_ += " text-anchor=\"middle\"";
  if (anchor == Anchor::end) out_ += " text-anchor=\"end\"";
  out_ += ">" + html_escape(plain) + "</text>";
}

void Svg::begin_group(std::string_view css_class, std::string_view data_name, std::string_view data_value) {
  out_ += "<g class=\"" + html_escape(css_class) + "\"";
  if (!data_name.empty()) out_ += " data-" + html_escape(data_name) + "=\"" + html_escape(data_value) + "\"";
  out_ += ">";
}

void Svg::end_group() { out_ += "</g>"; }

std::string Svg::finish() { return std::move(out_) + "</svg>"; }

}  // namespace causeway

namespace causeway {

namespace {

// Each cause's colour slot in the report's palette (docs/REPORT.md): a switch with no default,
// and every enumerator checked below at compile time, so a cause added without a colour does
// not build. A name shared by both levels (network, cpu_contention, …) has one colour.
constexpr const char* call_cause_colour(Cause c) {
  switch (c) {
    case Cause::cpu_contention: return "c0";
    case Cause::io_contention: return "c1";
    case Cause::memory_pressure: return "c2";
    case Cause::network: return "c3";
    case Cause::nccl_straggler: return "c4";
    case Cause::gpu_wait: return "c5";
    case Cause::lock_contention: return "c6";
    case Cause::cold_start:
    case Cause::allocator:
    case Cause::transfer_bound:
    case Cause::dataloader_starvation:
    case Cause::host_bound:
    case Cause::launch_bound:
    case Cause::graph_recapture:
    case Cause::unknown: return "c7";
  }
  throw "a Cause without a colour class";  // not a constant expression: the static_assert below fails
}

constexpr const char* request_cause_colour(requests::RequestCause c) {
  using requests::RequestCause;
  switch (c) {
    case RequestCause::cpu_contention: return "c0";
    case RequestCause::io_contention: return "c1";
    case RequestCause::memory_pressure: return "c2";
    case RequestCause::network: return "c3";
    case RequestCause::nccl_straggler: return "c4";
    case RequestCause::prefill_interference: return "c8";
    case RequestCause::kv_cache_pressure: return "c9";
    case RequestCause::queueing: return "c10";
    case RequestCause::api_server_busy: return "c11";
  }
  throw "a RequestCause without a colour class";
}

constexpr bool every_cause_coloured() {
  for (int i = 0; i < kCauseCount; ++i)
    if (!call_cause_colour(static_cast<Cause>(i))) return false;
  for (int i = 0; i < requests::kRequestCauseCount; ++i)
    if (!request_cause_colour(static_cast<requests::RequestCause>(i))) return false;
  return true;
}
static_assert(every_cause_coloured(), "every Cause and RequestCause needs a colour class in the report");

}  // namespace

// A name from a stored chain: a request cause's colour, else a call cause's; a name that is
// neither (an older DB's cause, "unexplained") gets the neutral slot.
const char* cause_class(std::string_view cause) {
  if (auto r = request_cause_named(cause)) return request_cause_colour(*r);
  if (auto c = call_cause_named(cause)) return call_cause_colour(*c);
  return "c7";
}

}  // namespace causeway
