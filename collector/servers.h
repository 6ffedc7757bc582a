// Which processes serve HTTP in a traced job (docs/INFERENCE.md "Which processes"): those
// listening on TCP that are traced or an ancestor of a traced process in the same session
// (vLLM's API server is the parent of its engine core), and any process listening on one of
// the --http-port ports. Read from /proc/PID/net/tcp{,6} (the listener's own network
// namespace: a server in a container is found too) and /proc/PID/fd.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "collector/endpoint.h"

namespace causeway::collector {

struct Server {
  uint32_t pid = 0;
  uint16_t port = 0;
  Endpoint listen;     // the address it listens on, in its own network namespace
  uint64_t netns = 0;  // that namespace (inode)
};

// Listening addresses, by socket inode, from /proc/net/tcp or tcp6 text (pure: tested on copies).
std::vector<std::pair<uint64_t, Endpoint>> parse_listeners(const std::string& proc_net_tcp);

// traced: processes traced now; ports: --http-port. One entry per listening socket (a
// process listening on two ports comes twice). Never returns self.
std::vector<Server> find_servers(const std::set<uint32_t>& traced, const std::vector<uint16_t>& ports, uint32_t self);

}  // namespace causeway::collector
