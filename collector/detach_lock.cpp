#include "collector/detach_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <thread>

namespace causeway::collector {
namespace {

// Root-only (tmpfs, cleared at boot): no other user can hold it to stall a trace.
constexpr const char* kLockPath = "/run/causeway-detach.lock";

int open_lock() { return ::open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600); }

}  // namespace

int lock_for_detach() {
  const int fd = open_lock();
  if (fd < 0) return -1;
  // Shared: several traces may be detaching at once; what must not overlap is a detach and an
  // attach, which asks for the lock exclusively (and only for a moment).
  if (::flock(fd, LOCK_SH) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::chrono::milliseconds wait_for_detaches(std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  const int fd = open_lock();
  if (fd < 0) return std::chrono::milliseconds(0);
  // An exclusive request succeeds once no detach holds its shared lock.
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0 && std::chrono::steady_clock::now() - start < timeout)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::close(fd);  // releases it at once: a running trace never holds it
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

}  // namespace causeway::collector
