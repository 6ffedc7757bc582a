// SVG primitives for the report (docs/REPORT.md): an inline <svg> built element by element.
// Geometry is rounded to 0.1 px (what a screen shows; keeps the file small), styles are CSS
// classes from report_html.cpp, and every text or tooltip goes through html_escape — callers
// pass text already sanitized (html_text's first half) or written by causeway itself.
#pragma once

#include <string>
#include <string_view>

namespace causeway {

enum class Anchor { start, middle, end };

class Svg {
 public:
  // role="img" + aria-label: the picture's one-line description for screen readers and tests.
  Svg(double width, double height, std::string_view label, std::string_view css_class = "");

  // `tooltip` (plain text, may be empty) becomes the element's <title>: a hover shows it.
  void rect(double x, double y, double w, double h, std::string_view css_class, std::string_view tooltip = "");
  void line(double x1, double y1, double x2, double y2, std::string_view css_class);
  void text(double x, double y, std::string_view plain, std::string_view css_class = "", Anchor anchor = Anchor::start);
  // Opens/closes a group (e.g. one lane) with data-* attributes tests and readers can find.
  void begin_group(std::string_view css_class, std::string_view data_name = "", std::string_view data_value = "");
  void end_group();

  std::string finish();  // the <svg> element
  double width() const { return width_; }

 private:
  std::string out_;
  double width_;
};

// A number for an SVG attribute: at most one decimal, no exponent.
std::string svg_num(double v);

}  // namespace causeway

namespace causeway {

// The colour class of a cause (c0…c7 in report_html.cpp), the same in every picture of a
// report: the host causes an SRE acts on first get the strongest colours.
const char* cause_class(std::string_view cause);

}  // namespace causeway
