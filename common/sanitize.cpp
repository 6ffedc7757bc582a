#include "common/sanitize.h"

#include "common/utf8.h"

#include <cstdint>

namespace causeway {
namespace {

// Code points that render as nothing or reorder text: a classic way to hide instructions.
bool invisible(uint32_t cp) {
  return (cp >= 0x200B && cp <= 0x200F) ||  // zero-width space/joiners, LRM/RLM
         (cp >= 0x202A && cp <= 0x202E) ||  // bidi embeddings and overrides
         (cp >= 0x2060 && cp <= 0x206F) ||  // word joiner, invisible operators, bidi isolates
         cp == 0xFEFF || cp == 0x00AD || cp == 0x034F || cp == 0x180E ||
         (cp >= 0xFFF0 && cp <= 0xFFFB) ||  // specials, interlinear annotation
         (cp >= 0xE0000 && cp <= 0xE007F);  // tag characters
}

}  // namespace

std::string sanitize_untrusted(std::string_view raw, size_t max_bytes) {
  std::string out;
  out.reserve(raw.size() < max_bytes ? raw.size() : max_bytes);
  size_t i = 0;
  while (i < raw.size()) {
    uint32_t cp = 0;
    size_t len = decode_utf8(raw, i, cp);
    std::string piece;
    if (len == 0) {
      piece = "\xEF\xBF\xBD";  // U+FFFD
      len = 1;
    } else if (cp == '\t' || cp == '\n' || cp == '\r') {
      piece = " ";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || invisible(cp)) {
      piece.clear();
    } else {
      piece.assign(raw.substr(i, len));
    }
    if (out.size() + piece.size() > max_bytes) {
      out += "\xE2\x80\xA6";  // …
      return out;
    }
    out += piece;
    i += len;
  }
  return out;
}

std::string repair_utf8(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    uint32_t cp = 0;
    const size_t len = decode_utf8(raw, i, cp);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(raw.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace causeway
