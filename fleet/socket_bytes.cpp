#include "fleet/socket_bytes.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace causeway::fleet {

std::optional<uint64_t> tcp_bytes_received(int fd) {
  if (fd < 0) return std::nullopt;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  if (len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) return std::nullopt;
  return info.tcpi_bytes_received;
}

}  // namespace causeway::fleet
