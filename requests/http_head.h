// HTTP/1.x message heads (request line or status line + header fields), parsed from the
// bytes of one direction of a connection. RFC 9112 §2-§6; field names case-insensitive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace causeway::requests {

// Heads longer than this are refused (counted), as servers do (nginx 8 KiB, aiohttp 8 KiB
// per line): a stream that never ends its head is not HTTP we can follow.
inline constexpr size_t kMaxHeadBytes = 16 * 1024;

enum class BodyKind : uint8_t { none, length, chunked, until_close };

struct HttpHead {
  std::string method, target;  // requests
  int status = 0;              // responses
  std::vector<std::pair<std::string, std::string>> fields;  // names lower-cased
  std::optional<std::string_view> field(std::string_view lower_name) const;
};

enum class HeadResult : uint8_t { complete, incomplete, invalid };

// On complete, head_len is the bytes up to and including the blank line.
HeadResult parse_request_head(std::string_view buf, HttpHead& out, size_t& head_len);
HeadResult parse_response_head(std::string_view buf, HttpHead& out, size_t& head_len);

// How the body that follows a head is delimited (RFC 9112 §6.3). Responses to HEAD and
// 1xx/204/304 have none; a response with neither length nor chunking runs until close.
BodyKind request_body(const HttpHead& h, uint64_t& length);
BodyKind response_body(const HttpHead& h, std::string_view request_method, uint64_t& length);

// What the first bytes of a connection's input are.
enum class Protocol : uint8_t { http1, tls, http2, other, unknown_yet };
Protocol sniff_protocol(std::string_view first_bytes);

// True when bytes begin like an HTTP/1.x request line ("GET /x HTTP/1.1"): resynchronises a
// connection whose framing was lost.
bool looks_like_request_line(std::string_view bytes);

}  // namespace causeway::requests
