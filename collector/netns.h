// Network namespaces of traced processes. A server in a container listens in its own
// namespace: its listeners are read from /proc/PID/net/tcp (that namespace's table, not the
// tracer's), and the engine-metrics scraper connects from inside it (docs/INFERENCE.md
// "Engine metrics").
#pragma once

#include <cstdint>

#include "common/result.h"

namespace causeway::collector {

// The namespace's inode (as in `readlink /proc/PID/ns/net`); 0 when the process is gone or
// its namespace cannot be read.
uint64_t net_namespace_of(uint32_t pid);

// A TCP socket of `family` made inside pid's network namespace. setns(CLONE_NEWNET) moves
// only the calling thread, and a socket keeps the namespace it was made in: the thread goes
// there for the socket() call and comes straight back. Same namespace as ours: a plain
// socket. The fd is O_CLOEXEC and non-blocking; the caller owns it.
Result<int> socket_in_namespace_of(uint32_t pid, int family);

}  // namespace causeway::collector
