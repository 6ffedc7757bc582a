// libFuzzer target for sqlguard's text layer (lexer + validator): no input may crash it, trip
// a sanitizer, or make it accept something that is not a single SELECT-like statement.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sqlguard/lexer.h"
#include "sqlguard/validator.h"

using namespace causeway::sqlguard;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view sql(reinterpret_cast<const char*>(data), size);
  LexResult lexed = tokenize(sql);
  if (!lexed.error) {
    // Tokens are non-empty and tile the input exactly.
    size_t at = 0;
    for (const Token& t : lexed.tokens) {
      require(t.offset == at && !t.text.empty());
      require(t.text.data() == sql.data() + at);
      at += t.text.size();
    }
    require(at == sql.size());
  } else {
    require(lexed.error->offset <= sql.size());
  }
  auto rejection = find_rejection(sql);
  if (rejection) {
    require(rejection->offset <= sql.size());
    require(!rejection->message.empty());
    return 0;
  }
  // Accepted: it lexed, it has one statement, and it starts like a read.
  require(!lexed.error);
  const Token* first = nullptr;
  bool after_semicolon = false;
  for (const Token& t : lexed.tokens) {
    if (!t.significant()) continue;
    if (!first) first = &t;
    if (t.is_op(";")) after_semicolon = true;
    else require(!after_semicolon);
    require(!(t.kind == TokenKind::word && (t.is_keyword("DELETE") || t.is_keyword("INSERT") ||
                                             t.is_keyword("UPDATE") || t.is_keyword("DROP") ||
                                             t.is_keyword("ATTACH") || t.is_keyword("PRAGMA") ||
                                             t.is_keyword("VACUUM"))));
  }
  require(first && (first->is_keyword("SELECT") || first->is_keyword("WITH") || first->is_keyword("VALUES") ||
                    first->is_keyword("EXPLAIN")));
  return 0;
}
