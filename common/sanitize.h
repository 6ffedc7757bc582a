// Traced strings (comm, cmdline, paths, symbols) come from processes we do not control and
// end up in front of an LLM. Everything that leaves the DB toward a person or a model goes
// through here: control and invisible characters removed, invalid UTF-8 replaced, length
// capped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace causeway {

// Drops C0/C1 controls (tab and newline become a space), zero-width and bidi-override code
// points, and other format characters; replaces invalid UTF-8 with U+FFFD; caps at max_bytes
// (on a code-point boundary) and appends "…" when cut.
std::string sanitize_untrusted(std::string_view raw, size_t max_bytes = 256);

// Only the encoding repaired: every invalid UTF-8 sequence (malformed, truncated, overlong,
// surrogate) becomes U+FFFD, one per bad byte; everything else, controls included, is kept
// (JSON escapes them). For strings read back from the trace DB, stored as they came, before
// they enter a JSON document (docs/SECURITY.md "Bytes from requests").
std::string repair_utf8(std::string_view raw);

}  // namespace causeway
