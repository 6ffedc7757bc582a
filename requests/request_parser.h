// The client → server direction of a connection: what the server reads. Decides what the
// connection speaks from its first bytes, parses request heads, follows request bodies
// (reading the model and output cap from them, requests/llm_payload.h), and queues each
// request for requests/response_parser.h to pair with its response, in order.
#pragma once

#include "requests/connection.h"

namespace causeway::requests {

class RequestParser {
 public:
  RequestParser(Tracker::Connection& c, Counters& n, const TrackerOptions& o) : c_(c), n_(n), o_(o) {}

  // One read record. A record starting mid-syscall (offset > 0) is never taken as the start
  // of a message: only a syscall's first bytes resynchronise a direction whose framing was lost.
  void read(const SockRecord& r);

 private:
  bool sniff(const SockRecord& r);
  void run(int64_t ts);
  void gap(uint64_t unseen, int64_t ts);
  void desync();
  void placeholder();
  void start(const HttpHead& h, int64_t ts);
  void finish(int64_t ts);
  void body(std::string_view b);
  void body_unseen(uint64_t n);

  Tracker::Connection& c_;
  Counters& n_;
  const TrackerOptions& o_;
};

}  // namespace causeway::requests
