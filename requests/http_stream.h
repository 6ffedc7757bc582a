// One direction of an HTTP/1.x connection as the kernel side copies it: the bytes not yet
// consumed, where the current message is in its framing, and where the last record ended in
// its syscall. The framing of bodies (Content-Length, chunked, until close) is the same in
// both directions and lives here once; requests/request_parser.h and
// requests/response_parser.h say what a head and the body bytes mean (RFC 9112 §6-§7).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "requests/http_head.h"
#include "requests/record.h"

namespace causeway::requests::http_stream {

// Where a direction is in its current message.
enum class Frame : uint8_t { head, length, chunk_size, chunk_data, chunk_crlf, trailers, until_close, desync };

// One direction's framing state.
struct Side {
  Frame frame = Frame::head;
  std::string buf;      // copied bytes not yet consumed
  uint64_t left = 0;    // body / chunk bytes still to come
  int64_t head_ts = 0;  // the record holding the head's first byte
  bool chunk_start = false;  // the next body bytes begin a chunk's data
};

// Where a direction's last record ended in its syscall, to see a piece of a long syscall
// that never came (the ring was full): the next piece's offset jumps past it, or the next
// syscall starts before the last one's total was reached.
struct Pieces {
  int64_t enter_ns = 0;
  uint64_t end = 0;
  uint64_t total = 0;
  // Bytes lost before r, and r noted as the last record.
  uint64_t lost_before(const SockRecord& r) {
    const bool same = r.offset > 0 && r.enter_ns == enter_ns;
    const uint64_t lost = same ? (r.offset > end ? r.offset - end : 0) : (total > end ? total - end : 0) + r.offset;
    enter_ns = r.enter_ns;
    end = r.offset + r.bytes;
    total = std::max(r.total, end);
    return lost;
  }
};

// The line-framed parts of a chunked body: the size line, the CRLF after a chunk's data,
// the trailer lines (RFC 9112 §7.1). ended: the blank line closing the message was read.
enum class LineStep : uint8_t { wait, next, ended, lost };
LineStep chunk_line(Side& s);

inline void enter_crlf(Side& s) {
  s.frame = Frame::chunk_crlf;
  s.left = 2;
}

inline void skip_crlf(Side& s, uint64_t& unseen) {
  const uint64_t n = std::min(unseen, s.left);
  unseen -= n;
  s.left -= n;
  if (s.left == 0) s.frame = Frame::chunk_size;
}

// One step through a body's framing: `take` gets the body bytes, `finish` ends the message,
// `lost` the chunk framing. False: wait for more bytes (or the framing was lost).
template <typename Take, typename Finish, typename Lost>
bool body_step(Side& s, Take take, Finish finish, Lost lost) {
  if (s.frame == Frame::length || s.frame == Frame::chunk_data) {
    const uint64_t n = std::min<uint64_t>(s.left, s.buf.size());
    take(std::string_view(s.buf).substr(0, n));
    s.chunk_start = false;
    s.buf.erase(0, n);
    s.left -= n;
    if (s.left == 0) {
      if (s.frame == Frame::length) finish();
      else enter_crlf(s);
    }
    return true;
  }
  switch (chunk_line(s)) {
    case LineStep::wait: return false;
    case LineStep::lost: lost(); return false;
    case LineStep::ended: finish(); return true;
    case LineStep::next: return true;
  }
  return true;
}

// Body bytes out of sight (beyond a syscall's copy): `take` counts them, the framing is
// followed by count (and the CRLF after a chunk's data). False: not in a body; the caller
// decides.
template <typename Take, typename Finish>
bool gap_step(Side& s, uint64_t& unseen, Take take, Finish finish) {
  if (s.frame == Frame::until_close) {
    take(unseen);
    unseen = 0;
    return true;
  }
  if (s.frame == Frame::length || s.frame == Frame::chunk_data) {
    const uint64_t n = std::min(unseen, s.left);
    take(n);
    s.chunk_start = false;
    s.left -= n;
    unseen -= n;
    if (s.left == 0) {
      if (s.frame == Frame::length) finish();
      else enter_crlf(s);
    }
    return true;
  }
  if (s.frame == Frame::chunk_crlf) {
    skip_crlf(s, unseen);
    return true;
  }
  return false;
}

// The head at the front of a side's bytes, consumed when complete; one that cannot be
// parsed is counted when it is over the size a head may have.
HeadResult take_head(Side& s, int64_t ts, HttpHead& h, Counters& n,
                     HeadResult (*parse)(std::string_view, HttpHead&, size_t&));

// Keeps the first kMaxPayloadBytes of a body (requests/llm_payload.h), up to the first
// bytes out of sight (then `cut`).
void keep_body(std::string& kept, bool& cut, std::string_view b);

}  // namespace causeway::requests::http_stream
