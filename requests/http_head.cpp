#include "requests/http_head.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace causeway::requests {
namespace {

constexpr std::string_view kMethods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE"};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool is_tchar(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// Splits buf into the first line and the field lines up to the blank line. Lines end in
// CRLF (a bare LF is accepted, as RFC 9112 §2.2 allows).
HeadResult split_head(std::string_view buf, std::string_view& first, std::vector<std::string_view>& lines,
                      size_t& head_len) {
  size_t pos = 0;
  bool have_first = false;
  while (true) {
    const size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) return buf.size() > kMaxHeadBytes ? HeadResult::invalid : HeadResult::incomplete;
    if (nl + 1 > kMaxHeadBytes) return HeadResult::invalid;
    std::string_view line = buf.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    if (!have_first) {
      first = line;
      have_first = true;
      continue;
    }
    if (line.empty()) {
      head_len = pos;
      return HeadResult::complete;
    }
    lines.push_back(line);
  }
}

bool parse_fields(const std::vector<std::string_view>& lines, HttpHead& out) {
  for (std::string_view l : lines) {
    const size_t colon = l.find(':');
    if (colon == 0 || colon == std::string_view::npos) return false;
    const std::string_view name = l.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); })) return false;
    out.fields.emplace_back(lower(name), std::string(trim(l.substr(colon + 1))));
  }
  return true;
}

bool has_token(std::string_view list, std::string_view token) {
  const std::string l = lower(list);
  size_t pos = 0;
  while (pos <= l.size()) {
    size_t comma = l.find(',', pos);
    if (comma == std::string::npos) comma = l.size();
    if (trim(std::string_view(l).substr(pos, comma - pos)) == token) return true;
    pos = comma + 1;
  }
  return false;
}

bool parse_length(std::string_view v, uint64_t& n) {
  v = trim(v);
  if (v.empty()) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && p == v.data() + v.size();
}

}  // namespace

std::optional<std::string_view> HttpHead::field(std::string_view lower_name) const {
  for (const auto& [k, v] : fields)
    if (k == lower_name) return std::string_view(v);
  return std::nullopt;
}

HeadResult parse_request_head(std::string_view buf, HttpHead& out, size_t& head_len) {
  std::string_view first;
  std::vector<std::string_view> lines;
  const HeadResult r = split_head(buf, first, lines, head_len);
  if (r != HeadResult::complete) return r;
  if (!looks_like_request_line(first)) return HeadResult::invalid;
  const size_t sp1 = first.find(' ');
  const size_t sp2 = first.rfind(' ');
  out = HttpHead{};
  out.method = std::string(first.substr(0, sp1));
  out.target = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
  return parse_fields(lines, out) ? HeadResult::complete : HeadResult::invalid;
}

HeadResult parse_response_head(std::string_view buf, HttpHead& out, size_t& head_len) {
  std::string_view first;
  std::vector<std::string_view> lines;
  const HeadResult r = split_head(buf, first, lines, head_len);
  if (r != HeadResult::complete) return r;
  // "HTTP/1.1 200 OK": version, space, three digits.
  if (first.size() < 12 || first.substr(0, 7) != "HTTP/1." || first[8] != ' ') return HeadResult::invalid;
  int status = 0;
  auto [p, ec] = std::from_chars(first.data() + 9, first.data() + 12, status);
  if (ec != std::errc() || p != first.data() + 12 || status < 100 || status > 599) return HeadResult::invalid;
  out = HttpHead{};
  out.status = status;
  return parse_fields(lines, out) ? HeadResult::complete : HeadResult::invalid;
}

BodyKind request_body(const HttpHead& h, uint64_t& length) {
  length = 0;
  if (auto te = h.field("transfer-encoding"); te && has_token(*te, "chunked")) return BodyKind::chunked;
  if (auto cl = h.field("content-length"); cl && parse_length(*cl, length)) return length ? BodyKind::length : BodyKind::none;
  return BodyKind::none;
}

BodyKind response_body(const HttpHead& h, std::string_view request_method, uint64_t& length) {
  length = 0;
  if (request_method == "HEAD" || (h.status >= 100 && h.status < 200) || h.status == 204 || h.status == 304)
    return BodyKind::none;
  if (auto te = h.field("transfer-encoding"); te && has_token(*te, "chunked")) return BodyKind::chunked;
  if (auto cl = h.field("content-length"); cl && parse_length(*cl, length)) return length ? BodyKind::length : BodyKind::none;
  return BodyKind::until_close;
}

Protocol sniff_protocol(std::string_view b) {
  if (b.empty()) return Protocol::unknown_yet;
  // TLS record: handshake (22) with a 3.x version.
  if (static_cast<unsigned char>(b[0]) == 0x16) return b.size() < 2 || b[1] == 0x03 ? Protocol::tls : Protocol::other;
  constexpr std::string_view kH2 = "PRI * HTTP/2.0\r\n";
  if (kH2.substr(0, std::min(kH2.size(), b.size())) == b.substr(0, std::min(kH2.size(), b.size())))
    return b.size() >= 4 ? Protocol::http2 : Protocol::unknown_yet;
  for (std::string_view m : kMethods) {
    const size_t n = std::min(m.size() + 1, b.size());
    const std::string with_space = std::string(m) + " ";
    if (std::string_view(with_space).substr(0, n) == b.substr(0, n))
      return b.size() > m.size() ? Protocol::http1 : Protocol::unknown_yet;
  }
  return Protocol::other;
}

bool looks_like_request_line(std::string_view b) {
  const size_t nl = b.find('\n');
  std::string_view line = b.substr(0, nl == std::string_view::npos ? std::min<size_t>(b.size(), 8192) : nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  const std::string_view method = line.substr(0, sp1);
  if (std::find(std::begin(kMethods), std::end(kMethods), method) == std::end(kMethods)) return false;
  const size_t sp2 = line.rfind(' ');
  // A line cut short by the kernel side's copy still starts a request: an origin-form target.
  if (nl == std::string_view::npos) return line.size() > sp1 + 1 && line[sp1 + 1] == '/';
  if (sp2 == sp1) return false;
  const std::string_view version = line.substr(sp2 + 1);
  return version == "HTTP/1.1" || version == "HTTP/1.0";
}

}  // namespace causeway::requests
