// Listening TCP sockets and client addresses for causeway's servers (MCP over HTTPS, the
// /metrics endpoint): both accept connections themselves, non-blocking, under their own
// deadlines (mcp/https_gate.h, metrics/scrape_gate.h).
#pragma once

#include <sys/socket.h>

#include <string>
#include <utility>

#include "common/result.h"
#include "common/unique_fd.h"

namespace causeway {

// A listening TCP socket for host:port, non-blocking, SO_REUSEADDR only: without
// SO_REUSEPORT a second server on the same port fails here instead of sharing the port
// (the kernel would split clients between the two). host "" or "0.0.0.0"/"::" = any address.
// Returns the fd and the bound port (port 0 = an ephemeral one). Error code "listen".
Result<std::pair<int, int>> listen_socket(const std::string& host, int port, int backlog);

// "10.0.0.2" / "fe80::1"; an IPv4-mapped address reads as IPv4, so one client is one key.
std::string peer_address_text(const sockaddr_storage& a);

// One accept4 on a non-blocking listening socket: the connection (non-blocking, close-on-exec)
// and its client's address text; an invalid fd with `out_of_fds` set when the process (or
// the system) has no descriptor left, or without it when nothing more waits.
struct Accepted {
  UniqueFd fd;
  std::string peer;
  bool out_of_fds = false;
};
Accepted accept_client(int listen_fd);

// Reads and drops what a client still sends on a connection being closed (after an answer
// that ends it early), so the close is not a TCP reset that loses the answer. `drained`
// counts across calls; true = keep draining later (nothing more now), false = close it now
// (the client closed, failed, or sent more than `cap`).
bool drain_client(int fd, size_t& drained, size_t cap);

}  // namespace causeway
