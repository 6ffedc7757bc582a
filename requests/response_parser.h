// The server → client direction of a connection: what the server writes. Parses response
// heads and pairs each with the oldest request waiting (requests/request_parser.h queues
// them), follows the body, finds SSE events in streamed ones (requests/sse_scanner.h) and
// reads the model and token counts (requests/llm_payload.h); hands the exchange out when the
// response ends or is cut.
#pragma once

#include "requests/connection.h"
#include "requests/llm_payload.h"

namespace causeway::requests {

class ResponseParser {
 public:
  ResponseParser(Tracker::Connection& c, Counters& n, std::vector<Request>& done, const TrackerOptions& o)
      : c_(c), n_(n), done_(done), o_(o) {}

  // One write record (see RequestParser::read on pieces of a syscall).
  void write(const SockRecord& r);
  // The connection closed (at ts; 0: unknown) while a response was being written: one
  // running until close is complete, any other is cut and ends as `cut` says.
  void close(int64_t ts, RequestEnd cut, bool count_cut);

 private:
  void run(int64_t ts);
  void gap(uint64_t unseen, int64_t ts);
  void start(const HttpHead& h, int64_t ts);
  void finish(int64_t ts);
  void desync();
  void body(std::string_view bytes, int64_t ts);
  void emit(RequestEnd end);
  void settle(Exchange& e);
  void take_events(Request& q, const std::vector<SseEvent>& events);

  Tracker::Connection& c_;
  Counters& n_;
  std::vector<Request>& done_;
  const TrackerOptions& o_;
  bool fresh_ = false;
};

}  // namespace causeway::requests
