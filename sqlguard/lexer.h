// SQL tokenizer that splits text the way SQLite's own tokenizer (tokenize.c) does, so the
// validator sees the same words SQLite will parse: a keyword hidden in a comment, a string
// or a quoted identifier is never mistaken for one, and one written with odd spacing or
// case is never missed.
//
// Deliberate differences from SQLite, each stricter: an unterminated block comment is an
// error (SQLite reads it to the end of input); a NUL byte is an error (SQLite stops there);
// Unicode whitespace or invisible format characters outside strings, quoted identifiers and
// comments are errors (SQLite takes bytes >= 0x80 as identifier characters, so "DROP<NBSP>x"
// would be one identifier to SQLite but two words to a human reviewer).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace causeway::sqlguard {

enum class TokenKind {
  space,       // ASCII whitespace: space, \t, \n, \f, \r
  comment,     // -- to end of line, or /* ... */
  word,        // bare identifier or keyword: [A-Za-z_\x80-\xff][A-Za-z0-9_$\x80-\xff]*
  quoted_id,   // "id", [id], `id`
  string,      // 'text' with '' for a quote
  blob,        // X'hex'
  number,      // 12, 1.5e3, .5, 0x1F
  variable,    // ?, ?12, :name, @name, $name
  op,          // punctuation and operators: ( ) , ; . + - * / % = == < <= <> != > >= << >> & | || ~ -> ->>
};

struct Token {
  TokenKind kind;
  size_t offset;          // byte offset in the input
  std::string_view text;  // view into the input

  bool significant() const { return kind != TokenKind::space && kind != TokenKind::comment; }
  // True for a bare word equal to kw (ASCII case-insensitive); kw must be upper case.
  bool is_keyword(std::string_view kw) const;
  bool is_op(std::string_view o) const { return kind == TokenKind::op && text == o; }
};

struct LexError {
  size_t offset;
  std::string message;  // names the offending construct, e.g. "unterminated string literal"
};

struct LexResult {
  std::vector<Token> tokens;          // covers the input contiguously when error is empty
  std::optional<LexError> error;
};

LexResult tokenize(std::string_view sql);

// The name a word or quoted identifier denotes: quotes removed, doubled quotes undone.
std::string identifier_name(const Token& t);

// ASCII lower case; SQLite compares identifiers and function names ASCII case-insensitively.
std::string ascii_lower(std::string_view s);

// Short printable excerpt of a token for error messages (control bytes escaped, capped).
std::string token_excerpt(std::string_view text);

}  // namespace causeway::sqlguard
