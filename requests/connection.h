// What the two parsers of a connection share (requests/request_parser.h reads the client's
// bytes, requests/response_parser.h the server's): the exchanges in flight, paired in order.
// Private to requests/tracker.cpp and the parsers.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "requests/http_stream.h"
#include "requests/sse_scanner.h"
#include "requests/tracker.h"

namespace causeway::requests {

// A request and its response. A placeholder stands for a request whose head could not be
// read: its response is framed (to find the next one) and dropped.
struct Exchange {
  Request req;
  bool placeholder = false;
  // The first kMaxPayloadBytes of each body (model and usage, requests/llm_payload.h); the
  // response's only when not streamed (events are read one by one).
  std::string request_body, response_body;
  bool request_cut = false, response_cut = false;  // bytes of the body went unseen or past the cap
};
using ExchangePtr = std::shared_ptr<Exchange>;

struct Tracker::Connection {
  uint64_t id = 0;
  uint32_t pid = 0;
  int32_t fd = -1;
  std::string peer;
  uint16_t local_port = 0;  // the server's (from the accept record)
  Protocol proto = Protocol::unknown_yet;
  bool ignored = false;  // not HTTP/1.x: nothing more is parsed
  uint64_t seq = 0;
  http_stream::Side in, out;
  http_stream::Pieces in_pieces, out_pieces;
  bool out_unseen = false;            // the response being written had streamed bytes not copied
  int64_t hangup_ns = 0;              // the client left (SockOp::hangup); 0: not seen
  ExchangePtr reading;                // the request being read
  ExchangePtr writing;                // the exchange whose response is being written (null: unmatched)
  bool writing_streamed = false;
  SseScanner sse;
  std::deque<ExchangePtr> waiting;    // requests without a response head yet, in order
  bool plaintext = false;             // TLS read through libssl: only its plaintext records are parsed
  // TLS: the arrival of the cipher bytes read since the last plaintext read (0: none), which
  // the next plaintext read took (docs/INFERENCE.md "Arrival time").
  int64_t cipher_first_ns = 0, cipher_last_ns = 0;
};

// Hands a finished (or abandoned) exchange out once; placeholders never.
inline void emit_exchange(Exchange& e, RequestEnd end, Counters& n, std::vector<Request>& done) {
  if (e.placeholder || e.req.start_ns == 0) return;
  e.req.end = end;
  if (e.req.end_ns == 0) e.req.end_ns = e.req.start_ns;
  if (e.req.read_end_ns == 0) e.req.read_end_ns = e.req.end_ns;
  ++n.requests;
  done.push_back(std::move(e.req));
  e.placeholder = true;  // emitted once
}

}  // namespace causeway::requests
