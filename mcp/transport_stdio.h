// stdio transport: one JSON-RPC message per line on stdin, responses and notifications one
// per line on stdout (stdout carries protocol only; logs go to stderr). A malformed line is
// answered with -32700 and serving continues. Returns on EOF or when stop() turns true.
#pragma once

#include <cstddef>
#include <functional>

#include "mcp/protocol.h"

namespace causeway::mcp {

struct StdioOptions {
  int in_fd = 0;
  int out_fd = 1;
  size_t max_message_bytes = 4 << 20;  // a longer line is refused, not buffered without bound
  size_t max_concurrent_calls = 4;     // tools/call run on worker threads so cancels get through
};

// Returns 0 on EOF / stop.
int serve_stdio(Server& server, const std::function<bool()>& stop, const StdioOptions& options = {});

}  // namespace causeway::mcp
