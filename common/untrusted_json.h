// JSON that came from outside the process: a client's JSON-RPC request, or a document stored in
// a trace DB that may have been written on another host (sessions.system, stacks.frames,
// chains.doc, test_reports.doc). nlohmann's parser itself is iterative, but copying, dumping
// and comparing a value recurse once per level of nesting, so a document nested 400,000 deep
// parses fine and then overflows the stack wherever it is first copied (docs/SECURITY.md).
// Every parse of such text goes through here: the size is capped, and a SAX pass counts depth
// and stops at the first level past the limit, before any tree is built.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/result.h"

namespace causeway {

// Deeper than anything causeway writes (a chain document is under 10 levels) and shallow
// enough that the recursive copy/dump/compare of nlohmann stays far from the stack limit.
inline constexpr size_t kJsonMaxDepth = 64;
// Stored documents and requests are kilobytes; 16 MiB is far above any honest one.
inline constexpr size_t kJsonMaxBytes = size_t{16} << 20;

struct JsonLimits {
  size_t max_depth = kJsonMaxDepth;
  size_t max_bytes = kJsonMaxBytes;
};

// The parsed value, or an error with code "json_too_large", "json_too_deep" or "json_invalid"
// whose message says which limit was passed.
Result<nlohmann::json> parse_untrusted_json(std::string_view text, JsonLimits limits = {});

// Stored documents that are optional: the parsed value, or null when the text is empty,
// malformed or past a limit (the caller treats it as "not recorded").
nlohmann::json parse_untrusted_json_or_null(std::string_view text, JsonLimits limits = {});

// Every string (values and keys) of doc passed through sanitize_untrusted (common/sanitize.h),
// each capped at max_bytes: for documents read back from a trace DB before they are shown to a
// person or a model. Recursive, so only for documents within kJsonMaxDepth (parsed above or
// built by causeway).
nlohmann::json sanitize_json_strings(nlohmann::json doc, size_t max_bytes);

}  // namespace causeway
