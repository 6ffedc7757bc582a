#include "common/sanitize.h"

#include <cstdint>

namespace causeway {
namespace {

// Decodes one UTF-8 code point at s[i]; returns its length, or 0 when malformed.
size_t decode_utf8(std::string_view s, size_t i, uint32_t& cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  if (c < 0x80) { cp = c; return 1; }
  if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; len = 2; }
  else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; len = 3; }
  else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; len = 4; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Reject overlong encodings and surrogates.
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

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

}  // namespace causeway
