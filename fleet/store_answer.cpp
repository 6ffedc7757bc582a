#include "fleet/store_answer.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>

#include "common/sanitize.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

bool answer_strip_wrapper(std::string_view& t, std::string_view wrapper) {
  if (t.size() > wrapper.size() + 1 && t.substr(0, wrapper.size()) == wrapper && t[wrapper.size()] == '(' && t.back() == ')') {
    t = t.substr(wrapper.size() + 1, t.size() - wrapper.size() - 2);
    return true;
  }
  return false;
}

bool answer_starts(std::string_view t, std::string_view p) { return t.substr(0, p.size()) == p; }

bool answer_is_integer(std::string_view v) {
  size_t i = v.size() > 1 && v[0] == '-' ? 1 : 0;
  if (i == v.size() || v.size() - i > 20) return false;
  for (; i < v.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  return true;
}

bool answer_is_float(const std::string& v) {
  if (v == "inf" || v == "-inf" || v == "+inf" || v == "nan" || v == "-nan") return true;
  if (v.empty() || v.size() > 64) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E') return false;
  char* end = nullptr;
  errno = 0;
  std::strtod(v.c_str(), &end);
  return end == v.c_str() + v.size();
}

const char* answer_kind_name(ColumnKind k) {
  switch (k) {
    case ColumnKind::Int: return "an integer";
    case ColumnKind::Float: return "a number";
    case ColumnKind::Text: return "text";
    case ColumnKind::Array: return "an array";
  }
  return "?";
}

std::vector<std::string_view> answer_fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t f = 0;
  while (true) {
    size_t tab = line.find('\t', f);
    out.push_back(line.substr(f, tab == std::string_view::npos ? std::string_view::npos : tab - f));
    if (tab == std::string_view::npos) return out;
    f = tab + 1;
  }
}

}  // namespace

bool column_kind_of(std::string_view t, ColumnKind& kind, bool& nullable) {
  nullable = false;
  if (answer_strip_wrapper(t, "LowCardinality")) {}
  if (answer_strip_wrapper(t, "Nullable")) nullable = true;
  if (answer_strip_wrapper(t, "LowCardinality")) {}
  if (t.empty() || t.size() > 256) return false;
  for (char c : t)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("(), '_=-", c)) return false;
  if (answer_starts(t, "Array(")) kind = ColumnKind::Array;
  else if (answer_starts(t, "Int") || answer_starts(t, "UInt")) kind = ColumnKind::Int;
  else if (answer_starts(t, "Float") || answer_starts(t, "Decimal")) kind = ColumnKind::Float;
  else if (answer_starts(t, "String") || answer_starts(t, "FixedString(") || answer_starts(t, "Enum") || answer_starts(t, "Date") || answer_starts(t, "UUID") ||
           answer_starts(t, "IPv") || t == "Nothing")
    kind = ColumnKind::Text;
  else return false;
  return true;
}

Result<StoreRows> parse_typed_answer(std::string_view body, const std::vector<ColumnKind>& kinds, std::string_view asked) {
  const size_t n = kinds.size();
  auto bad = [&](const std::string& what) {
    return make_error("fleet_bad_answer", "the fleet store's answer to " + std::string(asked) + " is malformed: " + what +
                                              "; nothing from it was used (is the URL ClickHouse's HTTP port?)");
  };
  if (body.empty()) return bad("it is empty (no header: ClickHouse always sends the names and types)");
  if (body.back() != '\n') return bad("it does not end with a newline (cut short?)");
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < body.size();) {
    size_t end = body.find('\n', pos);
    lines.push_back(body.substr(pos, end - pos));
    pos = end + 1;
  }
  if (lines.size() < 2) return bad("no names and types header");
  const auto names = answer_fields(lines[0]), types = answer_fields(lines[1]);
  if (names.size() != n || types.size() != n)
    return bad(std::to_string(std::max(names.size(), types.size())) + " column(s) where " + std::to_string(n) + " were asked");
  std::vector<bool> nullable(n);
  size_t i = 0;
  for (ColumnKind want : kinds) {
    ColumnKind got;
    bool null_ok = false;
    const std::string type = tsv_unescape(types[i]);
    if (!column_kind_of(type, got, null_ok)) return bad("column " + std::to_string(i + 1) + " has no known type ('" + sanitize_untrusted(type, 60) + "')");
    const bool fits = got == want || (want == ColumnKind::Float && got == ColumnKind::Int) || type == "Nothing" ||
                      type == "Nullable(Nothing)";
    if (!fits)
      return bad("column " + std::to_string(i + 1) + " is " + sanitize_untrusted(type, 60) + ", where " + answer_kind_name(want) + " was asked");
    nullable[i] = null_ok || type == "Nothing" || type == "Nullable(Nothing)";
    ++i;
  }
  StoreRows rows;
  rows.reserve(lines.size() - 2);
  for (size_t l = 2; l < lines.size(); ++l) {
    const auto fields = answer_fields(lines[l]);
    if (fields.size() != n)
      return bad("row " + std::to_string(l - 1) + " has " + std::to_string(fields.size()) + " field(s) where " + std::to_string(n) +
                 " columns were announced");
    std::vector<std::string> row;
    row.reserve(n);
    size_t c = 0;
    for (ColumnKind want : kinds) {
      std::string v = tsv_unescape(fields[c]);
      const bool ok = (nullable[c] && v == "\\N") || (want == ColumnKind::Int && answer_is_integer(v)) ||
                      (want == ColumnKind::Float && answer_is_float(v)) || want == ColumnKind::Text ||
                      (want == ColumnKind::Array && v.size() >= 2 && v.front() == '[' && v.back() == ']');
      if (!ok)
        return bad("row " + std::to_string(l - 1) + ", column " + std::to_string(c + 1) + " is not " + answer_kind_name(want) + " ('" +
                   sanitize_untrusted(v, 40) + "')");
      row.push_back(std::move(v));
      ++c;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace causeway::fleet
