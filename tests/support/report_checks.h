// What every test of `causeway report` checks of a page (docs/REPORT.md): nothing in it a
// browser could fetch, a CSP that forbids fetches, and balanced SVG and sections. Shared by
// the trace DB report's unit test and the fleet report's end-to-end test.
#pragma once

#include <doctest/doctest.h>

#include <regex>
#include <string>

namespace causeway::test {

inline size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

// Anything a browser could fetch: a scheme, a protocol-relative or root URL in an attribute,
// CSS url()/@import, a script, an embedded frame or object.
inline void check_self_contained(const std::string& html) {
  // Text from a trace may say "src=x" (escaped, it is text); only an attribute inside a tag
  // fetches: every '<' in the page opens a real element, since text has it as &lt;.
  static const std::regex fetchers(
      R"re((https?|ftp|wss?|file|data|javascript):|<[^<>]*\s(src|href|action|srcset|xlink:href|poster)\s*=\s*["']?[^"'#\s>]|url\(|@import|<script|<iframe|<object|<embed|<link|<img)re",
      std::regex::icase);
  std::smatch m;
  if (std::regex_search(html, m, fetchers)) FAIL("the page can fetch: " << m.str() << " at " << m.position());
  CHECK(html.find("Content-Security-Policy\" content=\"default-src 'none'") != std::string::npos);
  CHECK(count_of(html, "<svg") == count_of(html, "</svg>"));
  CHECK(count_of(html, "<section") == count_of(html, "</section>"));
}

}  // namespace causeway::test
