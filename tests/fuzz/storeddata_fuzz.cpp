// libFuzzer target for the decoders of data read back from a trace DB, which may be a hostile
// file (docs/SECURITY.md): rollups.hist blobs, stored JSON documents (sessions.system,
// chains.doc, test_reports.doc, JSON-RPC requests) and stacks.frames. No input may crash them,
// trip a sanitizer, or come out with a control character in a sanitized string.
// The first byte picks the decoder; the rest is the blob or document.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "diagnosis/frames.h"
#include "common/sanitize.h"
#include "common/untrusted_json.h"
#include "tracedb/histogram.h"

using namespace causeway;
using nlohmann::json;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

size_t depth_of(const json& j) {
  size_t deepest = 0;
  if (j.is_structured())
    for (const auto& v : j) deepest = std::max(deepest, depth_of(v));
  return j.is_structured() ? deepest + 1 : 0;
}

bool clean_text(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7F) return false;
  return s.find("\xE2\x80\xAE") == std::string_view::npos && s.find("\xC2\x9B") == std::string_view::npos;
}

bool clean_json(const json& j) {
  if (j.is_string()) return clean_text(j.get_ref<const std::string&>());
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      if (!clean_text(k) || !clean_json(v)) return false;
    return true;
  }
  if (j.is_array())
    for (const auto& v : j)
      if (!clean_json(v)) return false;
  return true;
}

void histogram(std::string_view blob) {
  LatencyHistogram h;
  h.add(5);
  h.add(1'000'000);
  const bool merged = h.merge_encoded(blob);
  if (!merged) {
    require(h.total() == 2);  // a refused blob merges nothing
    return;
  }
  // A blob that was accepted round-trips and every query stays in bounds.
  LatencyHistogram back;
  require(back.merge_encoded(h.encode()));
  require(back.total() == h.total());
  const uint64_t max = h.percentile(1.0, 0, UINT64_MAX);
  require(h.percentile(0.5, 0, UINT64_MAX) <= max);
  (void)h.tail_floor(0.99);
  (void)h.at_or_above(h.tail_floor(0.95), max);
  (void)h.min_value();
}

void document(std::string_view text) {
  auto doc = parse_untrusted_json(text, JsonLimits{.max_depth = 16, .max_bytes = 1 << 16});
  if (!doc) {
    if (doc.error().code == "json_invalid") require(!json::accept(text.begin(), text.end()));
    return;
  }
  require(json::accept(text.begin(), text.end()));
  require(depth_of(*doc) <= 16);
  const json copy = *doc;  // what the readers do next: copy, dump, sanitize
  (void)copy.dump(-1, ' ', false, json::error_handler_t::replace);
  require(clean_json(sanitize_json_strings(copy, 64)));
}

// stacks.frames: a JSON array of frame strings, as get_stacks, explain and export read it.
void frames(std::string_view text) {
  const json j = parse_untrusted_json_or_null(text);
  if (!j.is_array()) return;
  std::vector<std::string> texts;
  for (const auto& f : j)
    if (f.is_string()) texts.push_back(f.get<std::string>());
  const ParsedStack parsed = parse_stack(texts);
  for (const Frame& f : user_first(parsed.frames)) {
    const json fj = frame_to_json(f);
    require(clean_json(fj));
    require(clean_text(sanitize_untrusted(frame_json_text(fj), 200)));
  }
  (void)user_first_texts(texts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: histogram(rest); break;
    case 1: document(rest); break;
    default: frames(rest); break;
  }
  return 0;
}
