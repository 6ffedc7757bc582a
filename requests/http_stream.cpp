#include "requests/http_stream.h"

#include <charconv>

#include "requests/llm_payload.h"

namespace causeway::requests::http_stream {
namespace {

// A chunk-size line longer than this is not one (RFC 9112 §7.1: hex size + extensions).
constexpr size_t kMaxChunkLine = 1024;

// Parses the hex size of a chunk-size line ("1a;ext=x\r"); false when it is not one.
bool chunk_size_of(std::string_view line, uint64_t& size) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (const size_t semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line.empty()) return false;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
  return ec == std::errc() && p == line.data() + line.size();
}

}  // namespace

LineStep chunk_line(Side& s) {
  const size_t nl = s.buf.find('\n');
  if (nl == std::string::npos) return s.buf.size() > kMaxChunkLine ? LineStep::lost : LineStep::wait;
  const std::string line = s.buf.substr(0, nl);
  s.buf.erase(0, nl + 1);
  if (s.frame == Frame::chunk_crlf) {
    s.frame = Frame::chunk_size;
    return LineStep::next;
  }
  if (s.frame == Frame::trailers) return line.empty() || line == "\r" ? LineStep::ended : LineStep::next;
  uint64_t size = 0;
  if (!chunk_size_of(line, size)) return LineStep::lost;
  if (size == 0) {
    s.frame = Frame::trailers;
  } else {
    s.frame = Frame::chunk_data;
    s.left = size;
    s.chunk_start = true;
  }
  return LineStep::next;
}

HeadResult take_head(Side& s, int64_t ts, HttpHead& h, Counters& n,
                     HeadResult (*parse)(std::string_view, HttpHead&, size_t&)) {
  if (!s.head_ts) s.head_ts = ts;
  size_t len = 0;
  const HeadResult r = parse(s.buf, h, len);
  if (r == HeadResult::invalid && s.buf.size() > kMaxHeadBytes) ++n.headers_oversized;
  if (r == HeadResult::complete) s.buf.erase(0, len);
  return r;
}

void keep_body(std::string& kept, bool& cut, std::string_view b) {
  if (cut) return;
  const size_t room = kMaxPayloadBytes - std::min(kMaxPayloadBytes, kept.size());
  if (b.size() > room) cut = true;
  kept.append(b.substr(0, room));
}

}  // namespace causeway::requests::http_stream
