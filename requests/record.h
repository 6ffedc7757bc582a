// What the requests room takes in (socket records, decoded from bpf/sock.bpf.h by the
// collector, or captured byte streams in tests) and what it gives out (one Request per HTTP
// exchange). Plain data: the reassembly (requests/tracker.h) does no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace causeway::requests {

// hangup: the client is gone (a read returned 0, a write failed with EPIPE or ECONNRESET),
// which tells a client that left mid-response from a server that gave up on its own.
enum class SockOp : uint8_t { accept, read, write, close, hangup };

// How a write went (bpf/events.h enum cw_sock_send): a full send buffer shows as EAGAIN or a
// short write (requests/send_waits.h).
enum class SendResult : uint8_t { ok, short_write, eagain };

// One socket syscall of a server process, or one piece of it: the kernel side copies a long
// buffer in pieces (bpf/events.h CW_SOCK_MAX_COPY), each starting at `offset` in the
// syscall's bytes. `data` is what was copied of the piece, `bytes` what it stands for, so
// bytes > data.size() means the rest went unseen (bodies are followed by count, headers must
// fit in what was copied); an offset past the end of the syscall's previous record, or a
// new syscall before `total` was reached, means a piece was lost (docs/INFERENCE.md "Capture limits").
struct SockRecord {
  int64_t ts_ns = 0;  // syscall exit, Unix ns
  uint32_t pid = 0;   // tgid owning the socket
  uint32_t tid = 0;
  int32_t fd = -1;
  SockOp op = SockOp::read;
  uint64_t bytes = 0;
  std::string_view data;
  std::string peer;  // accept: the client's address ("10.0.0.2:51234"), "" when unknown
  uint16_t local_port = 0;  // accept: the server's port the connection came in on (0: unknown)
  SendResult send = SendResult::ok;  // writes; an EAGAIN record moved nothing (bytes 0, no data)
  int64_t enter_ns = 0;              // reads and writes: the syscall's entry, Unix ns (0: unknown)
  uint64_t offset = 0;               // reads and writes: where `data` starts in the syscall's bytes
  uint64_t total = 0;                // reads and writes: all the syscall moved (0: offset + bytes)
  bool tls = false;  // TLS plaintext from libssl (docs/INFERENCE.md "TLS"), not the socket's own bytes
  // Reads: how long before ts_ns the kernel received the first and the last byte this read
  // took, µs (bpf/arrival.bpf.h; docs/INFERENCE.md "Arrival time"); 0: not known, the read
  // time stands for the arrival.
  uint32_t arrive_first_us = 0, arrive_last_us = 0;
  int64_t arrive_first_ns() const { return arrive_first_us ? ts_ns - int64_t{arrive_first_us} * 1000 : ts_ns; }
  int64_t arrive_last_ns() const { return arrive_last_us ? ts_ns - int64_t{arrive_last_us} * 1000 : ts_ns; }
};

// How an exchange ended (docs/INFERENCE.md "Errors"). aborted: the server closed the
// connection before the response was complete and the client had not left; disconnected:
// the client left first; lost: the response's framing was lost (what followed is unknown);
// trace_end: still open when the trace stopped.
enum class RequestEnd : uint8_t { complete, aborted, disconnected, lost, trace_end };
const char* request_end_name(RequestEnd e);

// One HTTP/1.1 request and its response, as seen on the server's socket (docs/INFERENCE.md
// "What is measured").
struct Request {
  uint32_t pid = 0;
  int32_t fd = -1;
  std::string request_id;  // x-request-id, else generated ("gen-PID-CONN-N")
  bool id_generated = false;
  std::string method, path, tenant, peer;
  uint16_t local_port = 0;     // the server's port it came in on (0: unknown): the listener seen speaking HTTP
  // Arrival times (docs/INFERENCE.md "Arrival time"): the kernel's receipt of the request's
  // first and last byte; the server's read time where the arrival is not known.
  int64_t start_ns = 0;        // the request's first byte arrived
  int64_t end_ns = 0;          // its last byte arrived
  int64_t read_end_ns = 0;     // the server's read that completed it (end_ns → read_end_ns: api wait)
  int64_t first_byte_ns = 0;   // first write of the response (0: none)
  int64_t last_byte_ns = 0;    // the write that completed the response (or the last one seen)
  int status = 0;              // 0: no response head seen
  uint64_t prompt_bytes = 0;   // request body bytes
  uint64_t response_bytes = 0; // response body bytes
  bool streamed = false;       // Content-Type: text/event-stream
  bool complete = false;       // the whole response was written (false: disconnected / trace ended)
  RequestEnd end = RequestEnd::complete;  // set by the tracker when it hands the request out
  bool tls = false;            // read as TLS plaintext through libssl (docs/INFERENCE.md "TLS")
  std::vector<int64_t> token_ns;  // writes carrying each SSE `data:` event ([DONE] excluded)
  // From the bodies (requests/llm_payload.h): the request's "model" (else the response's),
  // its output cap, the server's token counts (usage), and the SSE events carrying
  // generated text (choices' delta content / text) with the writes of the first and last.
  std::string model;
  std::optional<uint64_t> max_tokens, input_tokens, output_tokens;
  uint32_t content_events = 0;
  int64_t first_content_ns = 0, last_content_ns = 0;
};

// What could not be turned into requests, and why (stored in collector_stats as request_*).
struct Counters {
  uint64_t connections = 0;
  uint64_t requests = 0;
  uint64_t tls = 0;                // TLS connections whose plaintext was not read (no libssl probed: static TLS)
  uint64_t http2 = 0;              // HTTP/2 prior-knowledge preface
  uint64_t non_http = 0;           // anything else that is not an HTTP/1.x request
  uint64_t headers_oversized = 0;  // a head longer than kMaxHeadBytes
  uint64_t headers_truncated = 0;  // a head longer than the kernel side's copy of one syscall
  uint64_t desync = 0;             // framing lost (a gap in a chunk header, a bad head)
  uint64_t sse_unseen = 0;         // streamed bodies with bytes not copied: their events there uncounted
  uint64_t disconnected = 0;       // closed before the response was complete (aborted or disconnected)
  uint64_t unmatched_responses = 0;
};

}  // namespace causeway::requests
