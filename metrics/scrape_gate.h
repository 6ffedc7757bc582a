// The /metrics endpoint's HTTP server: one thread, non-blocking sockets, a deadline for each
// connection's request head, its response write and its close. Scrapes are tiny GETs answered
// from memory, so the thread answers them itself and never waits on a client: a socket that
// sends its head one byte every few seconds (slowloris), or never reads its answer, holds a
// table entry until its deadline, never the server. Before (cpp-httplib, 2 workers, no head
// deadline) two such sockets held both workers, every scrape timed out, and `trace
// --duration` waited for them at exit. docs/METRICS.md, docs/SECURITY.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace causeway {

struct ScrapeLimits {
  // From accept (or from the end of the previous answer on a kept-alive connection) to a
  // complete request head: total, not per read.
  std::chrono::milliseconds head_timeout{5000};
  // To write one answer (a client that does not read it is closed then).
  std::chrono::milliseconds write_timeout{5000};
  // Open connections in all; a new one beyond closes the oldest that is not being answered.
  size_t max_connections = 512;
  // From one client address: its newest connection closes its own oldest, never another
  // client's, so one address cannot crowd out the rest.
  size_t max_per_peer = 16;
  // Request line + headers; a bigger head is answered 431 (RFC 6585 §5), then closed.
  size_t max_head_bytes = 8 * 1024;
  // After an answer that closes the connection early (431, a request with a body): how long
  // and how much of what the client still sends is read and dropped, so it reads the answer
  // instead of a TCP reset.
  std::chrono::milliseconds drain_timeout{2000};
  size_t drain_bytes = 16 << 20;
};

struct ScrapeRequest {
  std::string method;  // GET, HEAD, …
  std::string path;    // without the query string
};

struct ScrapeAnswer {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class ScrapeGate {
 public:
  using Handler = std::function<ScrapeAnswer(const ScrapeRequest&)>;
  // Takes ownership of listen_fd (non-blocking). `handler` answers GET and HEAD (the gate
  // answers other methods 405) on the gate thread: it must be quick (a render of counters in
  // memory is).
  ScrapeGate(int listen_fd, ScrapeLimits limits, Handler handler);

  // Serves until stop() is called; returns within one turn of the loop (no client is waited for).
  void run();
  // Thread-safe, idempotent.
  void stop();

 private:
  enum class Phase { kHead, kWrite, kDrain };
  struct Conn {
    UniqueFd fd;
    std::string peer;
    Phase phase = Phase::kHead;
    std::string in;   // bytes read, the next request head first
    std::string out;  // the answer being written
    size_t out_sent = 0;
    bool close_after = false;  // close (drain first when drain_after) once `out` is written
    bool drain_after = false;
    size_t drained = 0;
    std::chrono::steady_clock::time_point since, deadline;
  };

  void accept_new();
  void evict_oldest_of(const std::string* peer);
  // Advances one connection; false = close it.
  bool step(Conn& c);
  bool read_head(Conn& c);
  bool write_out(Conn& c);
  void answer(Conn& c, const std::string& head);

  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // eventfd: stop() was called
  std::atomic<bool> stopping_{false};
  ScrapeLimits limits_;
  Handler handler_;
  std::vector<Conn> table_;
};

}  // namespace causeway
