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

std::vector<std::vector<std::string>> tsv_rows(std::string_view body) {
  std::vector<std::vector<std::string>> rows;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(pos, end - pos);
    std::vector<std::string> fields;
    size_t f = 0;
    while (true) {
      size_t tab = line.find('\t', f);
      fields.push_back(tsv_unescape(line.substr(f, tab == std::string_view::npos ? std::string_view::npos : tab - f)));
      if (tab == std::string_view::npos) break;
      f = tab + 1;
    }
    rows.push_back(std::move(fields));
    pos = end + 1;
  }
  return rows;
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
