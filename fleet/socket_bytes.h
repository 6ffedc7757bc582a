// How many bytes a TCP socket has received since it was made, from the kernel
// (TCP_INFO's tcpi_bytes_received, Linux 4.1+). The fleet client's watchdog reads it to bound
// what a hostile store can send before the answer's body, where no receiver of ours runs
// (cpp-httplib keeps every response header line; docs/SECURITY.md "A hostile fleet store").
// Its own file: <linux/tcp.h> and the <netinet/tcp.h> cpp-httplib includes cannot share a
// translation unit (CMakeLists keeps it out of unity builds).
#pragma once

#include <cstdint>
#include <optional>

namespace causeway::fleet {

// nullopt when the fd is no TCP socket or the kernel does not count.
std::optional<uint64_t> tcp_bytes_received(int fd);

}  // namespace causeway::fleet
