// Slow and hostile HTTP clients for the endpoint tests (trace --metrics): sockets that connect
// and say nothing, sockets that drip a request head one byte at a time, and one honest GET
// timed end to end. Plain sockets on loopback; a client may take any 127.x.y.z source address
// (all of 127/8 is local on Linux), so "many clients" is many addresses.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

namespace causeway::test {

// A blocking TCP connection from `source_ip` (port 0) to 127.0.0.1:port; invalid on failure.
UniqueFd connect_from(const std::string& source_ip, int port);

// Raises RLIMIT_NOFILE to its hard limit (hundreds of sockets in one test).
void raise_fd_limit();

struct HttpReply {
  int status = 0;          // 0 = no status line came back (reset, timeout, closed)
  std::string head, body;
  double ms = 0;           // connect to the end of the answer
};

// Sends `request` whole from `source_ip`, reads the answer until Content-Length is complete (or,
// with until_close, until the server closes: pipelined answers end up in `body`), within timeout_ms.
HttpReply http_exchange(const std::string& source_ip, int port, const std::string& request, int timeout_ms, bool until_close = false);

// Sockets held open while a test runs: `idle` ones that say nothing, `drip` ones that send a
// request head one byte every drip_ms from a thread, until stop() or destruction.
class SlowClients {
 public:
  SlowClients(int port, size_t idle, size_t drip, std::chrono::milliseconds drip_ms);
  ~SlowClients();
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  size_t connected() const { return connected_; }
  // How many of the sockets the server has closed (EOF or reset) by now.
  size_t closed_by_server();
  void stop();

 private:
  std::vector<UniqueFd> idle_, drip_;
  size_t connected_ = 0;
  std::atomic<bool> stop_{false};
  std::thread dripper_;
};

}  // namespace causeway::test
