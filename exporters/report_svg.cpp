#include "exporters/report_svg.h"

#include <cmath>
#include <cstdio>

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

const char* cause_class(std::string_view cause) {
  static constexpr std::pair<std::string_view, const char*> kFixed[] = {
      {"cpu_contention", "c0"}, {"io_contention", "c1"},  {"memory_pressure", "c2"}, {"network", "c3"},
      {"nccl_straggler", "c4"}, {"gpu_wait", "c5"},       {"lock_contention", "c6"}, {"prefill_interference", "c8"},
      {"kv_cache_pressure", "c9"}, {"queueing", "c10"}, {"api_server_busy", "c11"}};
  for (const auto& [name, cls] : kFixed)
    if (name == cause) return cls;
  return "c7";
}

}  // namespace causeway
