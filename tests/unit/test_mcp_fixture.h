// A small trace DB for MCP unit tests, written through the real store writer.
#pragma once

#include <string>

namespace causeway::test {

// Writes one session: cudaStreamSynchronize/cudaLaunchKernel calls of pid 4821 (with stacks),
// a process whose name and command line try a prompt injection, a chain and a selftest
// report. Returns the DB path inside dir.
std::string write_mcp_fixture(const std::string& dir);

}  // namespace causeway::test
