#include "requests/prom_text.h"

#include <cmath>
#include <cstdlib>

namespace causeway::requests {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

// A label value: "..." with \\, \" and \n escapes, kept escaped as exposed. Returns the
// position after the closing quote, or npos.
size_t quoted_end(std::string_view s, size_t i) {
  if (i >= s.size() || s[i] != '"') return std::string_view::npos;
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      if (++i >= s.size()) return std::string_view::npos;
      if (s[i] != '\\' && s[i] != '"' && s[i] != 'n') return std::string_view::npos;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// {k="v",...}: returns the canonical text (no blanks, no trailing comma) and the position
// after '}', or npos when malformed.
size_t parse_labels(std::string_view s, size_t i, std::string& out) {
  ++i;  // '{'
  while (true) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size() && s[i] == '}') return i + 1;
    const size_t k0 = i;
    if (i >= s.size() || !name_start(s[i]) || s[i] == ':') return std::string_view::npos;
    while (i < s.size() && name_char(s[i]) && s[i] != ':') ++i;
    const std::string_view key = s.substr(k0, i - k0);
    while (i < s.size() && s[i] == ' ') ++i;
    if (i >= s.size() || s[i] != '=') return std::string_view::npos;
    ++i;
    while (i < s.size() && s[i] == ' ') ++i;
    const size_t v0 = i, v1 = quoted_end(s, i);
    if (v1 == std::string_view::npos) return v1;
    if (!out.empty()) out += ',';
    out.append(key).append("=").append(s.substr(v0, v1 - v0));
    i = v1;
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size() && s[i] == ',') ++i;
    else if (i < s.size() && s[i] == '}') return i + 1;
    else return std::string_view::npos;
  }
}

// The value token: a float as Go's ParseFloat takes it, NaN and ±Inf included.
bool parse_value(std::string_view tok, double& v) {
  if (tok.empty() || tok.size() > 64) return false;
  char buf[65];
  tok.copy(buf, tok.size());
  buf[tok.size()] = '\0';
  char* end = nullptr;
  v = std::strtod(buf, &end);
  return end == buf + tok.size();
}

}  // namespace

PromParse parse_prometheus(std::string_view text, const PromLimits& lim) {
  PromParse out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size() || line[i] == '#') continue;
    if (line.size() > lim.max_line_bytes) {
      ++out.bad_lines;
      continue;
    }
    const size_t n0 = i;
    if (!name_start(line[i])) {
      ++out.bad_lines;
      continue;
    }
    while (i < line.size() && name_char(line[i])) ++i;
    PromSample s;
    s.name = std::string(line.substr(n0, i - n0));
    if (i < line.size() && line[i] == '{') {
      i = parse_labels(line, i, s.labels);
      if (i == std::string_view::npos) {
        ++out.bad_lines;
        continue;
      }
    }
    if (s.name.size() > lim.max_name_bytes || s.labels.size() > lim.max_labels_bytes || i >= line.size() ||
        (line[i] != ' ' && line[i] != '\t')) {
      ++out.bad_lines;
      continue;
    }
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t v1 = i;
    while (v1 < line.size() && line[v1] != ' ' && line[v1] != '\t') ++v1;
    // What follows the value may only be a timestamp (an integer), which is not kept: the
    // scrape's own time is the sample's.
    std::string_view rest = line.substr(v1);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
    bool ts_ok = true;
    for (size_t k = 0; k < rest.size(); ++k)
      if (!((rest[k] >= '0' && rest[k] <= '9') || (k == 0 && rest[k] == '-'))) ts_ok = false;
    if (!parse_value(line.substr(i, v1 - i), s.value) || !ts_ok) {
      ++out.bad_lines;
      continue;
    }
    if (!std::isfinite(s.value) || out.samples.size() >= lim.max_samples) {
      ++out.dropped;
      continue;
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace causeway::requests
