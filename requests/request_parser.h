// The client → server direction of a connection: what the server reads. Decides what the
// connection speaks from its first bytes, parses request heads, follows request bodies
// (reading the model and output cap from them, requests/llm_payload.h), and queues each
// request for requests/response_parser.h to pair with its response, in order.
#pragma once

#include "requests/connection.h"

namespace causeway::requests {

// The times of one read: when the kernel received its first and last byte, and the read
// itself (docs/INFERENCE.md "Arrival time").
struct ReadTimes {
  int64_t first = 0, last = 0, read = 0;
};

class RequestParser {
 public:
  RequestParser(Tracker::Connection& c, Counters& n, const TrackerOptions& o) : c_(c), n_(n), o_(o) {}

  // One read record. A record starting mid-syscall (offset > 0) is never taken as the start
  // of a message: only a syscall's first bytes resynchronise a direction whose framing was lost.
  void read(const SockRecord& r);

 private:
  bool sniff(const SockRecord& r);
  void run(const ReadTimes& t);
  void gap(uint64_t unseen, const ReadTimes& t);
  void desync();
  void placeholder();
  void start(const HttpHead& h, int64_t first_arrival);
  void finish(const ReadTimes& t);
  void body(std::string_view b);
  void body_unseen(uint64_t n);

  Tracker::Connection& c_;
  Counters& n_;
  const TrackerOptions& o_;
};

}  // namespace causeway::requests
