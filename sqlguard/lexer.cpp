#include "sqlguard/lexer.h"

#include <optional>

#include "common/utf8.h"

#include <cstdint>
#include <cstdio>

namespace causeway::sqlguard {
namespace {

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// SQLite's IdChar in an ASCII build: letters, digits, '_', '$' and every byte >= 0x80.
bool is_id_start(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
bool is_id_char(unsigned char c) { return is_id_start(c) || is_digit(c) || c == '$'; }

// Unicode whitespace and invisible format characters: a reader sees a gap or nothing where
// SQLite sees part of an identifier.
bool is_unicode_space_or_format(uint32_t cp) {
  return cp == 0x85 || cp == 0xA0 || cp == 0xAD || cp == 0x1680 || cp == 0x180E || (cp >= 0x2000 && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206F) ||
         cp == 0x3000 || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE007F);
}

std::string hex_cp(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

// Length of a quoted token starting at i with opening quote q and closing quote close;
// a doubled closing quote stands for itself (except for [..], which has no escape).
// Returns 0 when unterminated.
size_t quoted_length(std::string_view s, size_t i, char close, bool doubling) {
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] != close) continue;
    if (doubling && j + 1 < s.size() && s[j + 1] == close) {
      ++j;
      continue;
    }
    return j + 1 - i;
  }
  return 0;
}

}  // namespace

bool Token::is_keyword(std::string_view kw) const {
  if (kind != TokenKind::word || text.size() != kw.size()) return false;
  for (size_t i = 0; i < kw.size(); ++i) {
    char c = text[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != kw[i]) return false;
  }
  return true;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string identifier_name(const Token& t) {
  if (t.kind != TokenKind::quoted_id || t.text.size() < 2) return std::string(t.text);
  char close = t.text.back();
  std::string_view inner = t.text.substr(1, t.text.size() - 2);
  if (close == ']') return std::string(inner);
  std::string out;
  for (size_t i = 0; i < inner.size(); ++i) {
    out += inner[i];
    if (inner[i] == close && i + 1 < inner.size() && inner[i + 1] == close) ++i;
  }
  return out;
}

std::string token_excerpt(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F || c >= 0x80) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMax) out += "...";
  return out;
}

namespace lex_detail {

// One token's length from offset i, or why there is no token there.
struct LexStep {
  size_t len = 0;
  std::optional<LexError> error;
};

// A number: decimal, hex (0x…), with a fraction and an exponent.
LexStep lex_number(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
  size_t j = i;
  if (c == '0' && (next == 'x' || next == 'X') && i + 2 < s.size() && is_hex(static_cast<unsigned char>(s[i + 2]))) {
    j = i + 2;
    while (j < s.size() && is_hex(static_cast<unsigned char>(s[j]))) ++j;
  } else {
    while (j < s.size() && is_digit(static_cast<unsigned char>(s[j]))) ++j;
    if (j < s.size() && s[j] == '.') {
      ++j;
      while (j < s.size() && is_digit(static_cast<unsigned char>(s[j]))) ++j;
    }
    if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
      size_t k = j + 1;
      if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
      if (k < s.size() && is_digit(static_cast<unsigned char>(s[k]))) {
        j = k;
        while (j < s.size() && is_digit(static_cast<unsigned char>(s[j]))) ++j;
      }
    }
  }
  // SQLite makes "12abc" one illegal token rather than a number and a word.
  if (j < s.size() && is_id_char(static_cast<unsigned char>(s[j])))
    return LexStep{0, LexError{i, "malformed number '" + token_excerpt(s.substr(i, j + 1 - i)) + "'"}};
  return LexStep{j - i, std::nullopt};
}

// A word (keyword or identifier), UTF-8 allowed but no Unicode space or format character.
LexStep lex_word(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_id_char(static_cast<unsigned char>(s[j]))) {
    if (static_cast<unsigned char>(s[j]) >= 0x80) {
      uint32_t cp = 0;
      size_t n = decode_utf8(s, j, cp);
      if (n == 0) return LexStep{0, LexError{j, "invalid UTF-8 outside a string literal"}};
      if (is_unicode_space_or_format(cp))
        return LexStep{0, LexError{j, "Unicode whitespace or invisible character " + hex_cp(cp) +
                           " outside a string literal; use an ASCII space"}};
      j += n;
    } else {
      ++j;
    }
  }
  return LexStep{j - i, std::nullopt};
}

// A parameter marker: ?, ?NNN, :name, @name, $name (with :: parts).
LexStep lex_variable(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t j = i + 1;
  if (c == '?') {
    while (j < s.size() && is_digit(static_cast<unsigned char>(s[j]))) ++j;
  } else {
    while (j < s.size()) {
      if (is_id_char(static_cast<unsigned char>(s[j]))) ++j;
      else if (c == '$' && s[j] == ':' && j + 1 < s.size() && s[j + 1] == ':') j += 2;
      else break;
    }
    if (j == i + 1) return LexStep{0, LexError{i, "parameter marker '" + std::string(1, static_cast<char>(c)) + "' without a name"}};
  }
  return LexStep{j - i, std::nullopt};
}

// An operator or punctuation of one to three characters.
LexStep lex_operator(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
  size_t len = 1;
  switch (c) {
    case '-':
      len = next == '>' ? (i + 2 < s.size() && s[i + 2] == '>' ? 3 : 2) : 1;
      break;
    case '(': case ')': case ';': case '+': case '*': case '/': case '%': case ',': case '&': case '~': case '.':
      break;
    case '=': len = next == '=' ? 2 : 1; break;
    case '<': len = (next == '=' || next == '>' || next == '<') ? 2 : 1; break;
    case '>': len = (next == '=' || next == '>') ? 2 : 1; break;
    case '|': len = next == '|' ? 2 : 1; break;
    case '!':
      if (next != '=') return LexStep{0, LexError{i, "unexpected character '!'"}};
      len = 2;
      break;
    default:
      return LexStep{0, LexError{i, "unexpected character '" + token_excerpt(s.substr(i, 1)) + "'"}};
  }
  return LexStep{len, std::nullopt};
}

}  // namespace lex_detail

LexResult tokenize(std::string_view s) {
  LexResult r;
  auto fail = [&](size_t at, std::string msg) {
    r.error = LexError{at, std::move(msg)};
    return r;
  };
  // SQLite stops reading at a NUL byte even inside a string or comment, so anything after
  // it would be invisible to SQLite yet seen here (or the reverse): refuse it outright.
  if (size_t nul = s.find('\0'); nul != std::string_view::npos) return fail(nul, "NUL byte in SQL text");
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    TokenKind kind = TokenKind::op;
    size_t len = 1;

    if (is_space(c)) {
      kind = TokenKind::space;
      while (start + len < s.size() && is_space(static_cast<unsigned char>(s[start + len]))) ++len;
    } else if (c == '-' && next == '-') {
      kind = TokenKind::comment;
      size_t nl = s.find('\n', i);
      len = (nl == std::string_view::npos ? s.size() : nl) - i;
    } else if (c == '/' && next == '*') {
      size_t end = s.find("*/", i + 2);
      if (end == std::string_view::npos) return fail(i, "unterminated /* comment");
      kind = TokenKind::comment;
      len = end + 2 - i;
    } else if (c == '\'') {
      kind = TokenKind::string;
      len = quoted_length(s, i, '\'', true);
      if (len == 0) return fail(i, "unterminated string literal");
    } else if (c == '"' || c == '`' || c == '[') {
      kind = TokenKind::quoted_id;
      len = quoted_length(s, i, c == '[' ? ']' : static_cast<char>(c), c != '[');
      if (len == 0) return fail(i, "unterminated quoted identifier");
    } else if ((c == 'x' || c == 'X') && next == '\'') {
      kind = TokenKind::blob;
      len = quoted_length(s, i + 1, '\'', false);
      if (len == 0) return fail(i, "unterminated blob literal");
      len += 1;
      std::string_view hex = s.substr(i + 2, len - 3);
      if (hex.size() % 2 != 0) return fail(i, "blob literal with an odd number of hex digits");
      for (size_t k = 0; k < hex.size(); ++k)
        if (!is_hex(static_cast<unsigned char>(hex[k]))) return fail(i + 2 + k, "non-hex digit in blob literal");
    } else if (is_digit(c) || (c == '.' && is_digit(next))) {
      kind = TokenKind::number;
      auto step = lex_detail::lex_number(s, i);
      if (step.error) return fail(step.error->offset, std::move(step.error->message));
      len = step.len;
    } else if (is_id_start(c)) {
      kind = TokenKind::word;
      auto step = lex_detail::lex_word(s, i);
      if (step.error) return fail(step.error->offset, std::move(step.error->message));
      len = step.len;
    } else if (c == '?' || c == ':' || c == '@' || c == '$') {
      kind = TokenKind::variable;
      auto step = lex_detail::lex_variable(s, i);
      if (step.error) return fail(step.error->offset, std::move(step.error->message));
      len = step.len;
    } else {
      auto step = lex_detail::lex_operator(s, i);
      if (step.error) return fail(step.error->offset, std::move(step.error->message));
      len = step.len;
    }
    r.tokens.push_back(Token{kind, start, s.substr(start, len)});
    i = start + len;
  }
  return r;
}

}  // namespace causeway::sqlguard
