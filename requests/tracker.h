// HTTP/1.1 reassembly from socket records, per (pid, fd) connection: a parser per direction
// (requests/request_parser.h for what the server reads, requests/response_parser.h for what
// it writes, both framing bodies with requests/http_stream.h), responses paired with requests
// in order (keep-alive and pipelining), SSE events found in streamed responses. The tracker
// routes records to the connection's parsers and ends connections. Pure code: records in,
// requests out (docs/INFERENCE.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "requests/record.h"

namespace causeway::requests {

struct TrackerOptions {
  std::string tenant_header = "x-tenant";  // lower-cased by the tracker
  size_t max_connections = 65536;          // beyond: the oldest-seen connection is dropped, counted as desync
  size_t max_tokens = 1 << 16;             // token times kept per request
  // The capture hands over SockOp::hangup records (the client left). Without them a close
  // before the response was complete cannot say who gave up: it counts as disconnected (the
  // common case: a client cancelling a stream); with them, no hangup first means aborted.
  bool hangups_reported = false;
};

class Tracker {
 public:
  explicit Tracker(TrackerOptions options = {});
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  void add(const SockRecord& r);
  // Requests finished (or abandoned by a close) since the last call.
  std::vector<Request> take();
  // The trace ends: requests still open come out as incomplete.
  void finish();
  const Counters& counters() const { return counters_; }
  size_t open_connections() const { return conns_.size(); }

  struct Connection;

 private:
  void close(uint64_t key, int64_t ts);
  void end_connection(Connection& c, int64_t ts, bool trace_end);
  TrackerOptions o_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<Request> done_;
  Counters counters_;
  uint64_t next_conn_ = 1;
};

}  // namespace causeway::requests
