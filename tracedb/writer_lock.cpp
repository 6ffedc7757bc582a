#include "tracedb/writer_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/sanitize.h"

namespace causeway {
namespace {

// The first line of a held lock file: "PID HOLDER". Another user's file: untrusted text.
std::string holder_of(int fd) {
  char buf[256];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string_view line(buf, static_cast<size_t>(n));
  line = line.substr(0, line.find('\n'));
  return sanitize_untrusted(line, 200);
}

}  // namespace

Result<DbWriterLock> DbWriterLock::acquire(const std::string& db_path, std::string_view holder,
                                           const std::optional<FsUser>& as) {
  const std::string path = db_path + "-lock";
  auto scope = AsFsUser::enter(as);
  if (!scope) return scope.error();
  // A holder that exits removes the file between our open and our flock; only a lock on the
  // file still at the path counts, so look again (a few times: each needs a holder to exit).
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return make_error("db_open", "cannot open the writer lock " + path + ": " + std::strerror(errno));
    DbWriterLock lock;
    lock.fd_ = fd;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      std::string who = holder_of(fd);
      lock.fd_ = -1;
      ::close(fd);
      if (err != EWOULDBLOCK)
        return make_error("db_open", "cannot lock " + path + ": " + std::strerror(err));
      const auto space = who.find(' ');
      const std::string pid = who.substr(0, space);
      const std::string name = space == std::string::npos ? std::string("another writer") : who.substr(space + 1);
      return make_error("db_busy", db_path + " is being written by " + name +
                                       (pid.empty() ? std::string() : " (pid " + pid + ")") +
                                       ": a trace DB has one writer at a time; stop that one first, or pass "
                                       "--db with another file");
    }
    struct stat held {}, at_path {};
    if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &at_path) != 0 || held.st_ino != at_path.st_ino ||
        held.st_dev != at_path.st_dev) {
      ::close(fd);
      lock.fd_ = -1;
      continue;
    }
    lock.path_ = path;
    lock.as_ = as;
    const std::string line = std::to_string(::getpid()) + " " + std::string(holder) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()))
      return make_error("db_open", "cannot write the writer lock " + path + ": " + std::strerror(errno));
    lock.header_bytes_ = static_cast<int64_t>(line.size());
    (void)lock.reserve();  // a disk already too full for it only loses the last-words guarantee
    return lock;
  }
  return make_error("db_busy", "cannot lock " + path + ": it keeps being replaced by other writers");
}

DbWriterLock::DbWriterLock(DbWriterLock&& other) noexcept { *this = std::move(other); }

DbWriterLock& DbWriterLock::operator=(DbWriterLock&& other) noexcept {
  if (this != &other) {
    unlock();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    as_ = std::move(other.as_);
    header_bytes_ = other.header_bytes_;
    reserved_ = other.reserved_;
    other.fd_ = -1;
    other.reserved_ = false;
  }
  return *this;
}

DbWriterLock::~DbWriterLock() { unlock(); }

void DbWriterLock::unlock() {
  if (fd_ < 0) return;
  // Removed while still locked: a writer waiting on this file finds it gone and retries.
  // As the user it was made as: by now the folder may hold their links.
  if (auto scope = AsFsUser::enter(as_)) (void)::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

bool DbWriterLock::release_reserve() {
  if (fd_ < 0 || !reserved_) return false;
  reserved_ = ::ftruncate(fd_, header_bytes_) != 0;
  return !reserved_;
}

bool DbWriterLock::reserve() {
  if (fd_ < 0) return false;
  if (reserved_) return true;
  reserved_ = ::posix_fallocate(fd_, header_bytes_, kReserveBytes) == 0;
  if (!reserved_) (void)::ftruncate(fd_, header_bytes_);  // what a failed try did allocate
  return reserved_;
}

}  // namespace causeway
