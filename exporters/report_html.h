// The report's document skeleton (docs/REPORT.md): one self-contained HTML page, CSS inline,
// no script, and a Content-Security-Policy that forbids every fetch, so even text that got
// past the escaping could not load anything. Every string from a trace reaches the page
// through html_text(): sanitized (common/sanitize.h) and then HTML-escaped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace causeway {

// & < > " ' as entities: safe in element text and in quoted attribute values.
std::string html_escape(std::string_view text);

// Untrusted text (comm, op, path, frame) for the page: sanitize_untrusted() then html_escape().
std::string html_text(std::string_view untrusted, size_t max_bytes = 256);

// The whole page around `body` (already HTML): doctype, charset, CSP, the report's CSS.
std::string html_page(std::string_view title, std::string_view body);

}  // namespace causeway
