#include "fleet/tsv.h"

namespace causeway::fleet {

void tsv_escape_append(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      case '\0': out += "\\0"; break;
      default: out += c;
    }
  }
}

std::string tsv_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char n = s[++i];
    switch (n) {
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case '\'': out += '\''; break;
      case '\\': out += '\\'; break;
      default: out += '\\', out += n;  // keeps "\N" (NULL) readable by the caller
    }
  }
  return out;
}

std::string sql_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    if (c == '\0') {
      out += "\\0";
      continue;
    }
    out += c;
  }
  return out + "'";
}

}  // namespace causeway::fleet
