#include "collector/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/unique_fd.h"

namespace causeway::collector {
namespace {

uint64_t inode_of(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int tcp_socket(int family) { return ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }

}  // namespace

uint64_t net_namespace_of(uint32_t pid) { return inode_of("/proc/" + std::to_string(pid) + "/ns/net"); }

Result<int> socket_in_namespace_of(uint32_t pid, int family) {
  const std::string theirs_path = "/proc/" + std::to_string(pid) + "/ns/net";
  const uint64_t theirs = inode_of(theirs_path);
  if (theirs == 0) return make_error("netns", "process " + std::to_string(pid) + " is gone");
  if (theirs == inode_of("/proc/thread-self/ns/net")) {
    const int s = tcp_socket(family);
    if (s < 0) return make_error("connect", std::string("socket failed: ") + std::strerror(errno));
    return s;
  }
  const UniqueFd home{::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)};
  const UniqueFd target{::open(theirs_path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!home || !target) return make_error("netns", "cannot open the network namespaces");
  if (::setns(target.get(), CLONE_NEWNET) != 0)
    return make_error("netns", std::string("cannot enter the server's network namespace: ") + std::strerror(errno));
  UniqueFd s{tcp_socket(family)};
  const int socket_errno = errno;
  if (::setns(home.get(), CLONE_NEWNET) != 0) {
    // This thread would make every later socket in the server's namespace: unrecoverable
    // for it. Only a seccomp filter could refuse the way back that let us in.
    return make_error("netns_stuck", std::string("cannot return to our network namespace: ") + std::strerror(errno));
  }
  if (!s) return make_error("connect", std::string("socket failed: ") + std::strerror(socket_errno));
  return s.release();
}

}  // namespace causeway::collector
