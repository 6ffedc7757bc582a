#include "common/user_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "common/fs_user.h"
#include "common/unique_fd.h"

namespace causeway {
namespace {

std::string who(const std::optional<FsUser>& as) { return as ? " as " + as->name : ""; }

// Only a plain file with this one name is written: a FIFO would hang us (opened
// O_NONBLOCK for that reason), a device or a second hard link would send the output elsewhere.
Result<void> check_plain_file(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error("output_open", "cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("output_link", path + " is not a regular file: refusing to write into it");
  if (st.st_nlink > 1)
    return make_error("output_link", path + " has " + std::to_string(st.st_nlink) +
                                         " hard links: writing it would change the other names' file too");
  // Back to blocking writes now that it is known to be a file.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return {};
}

Result<void> write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("output_io", "writing " + path + " failed: " + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace

Result<int> open_user_output(const std::string& path, OutputOpen how, mode_t perm) {
  auto as = write_identity_for(path);
  if (!as) return as.error();
  auto scope = AsFsUser::enter(*as);
  if (!scope) return scope.error();
  const int mode_flags = how == OutputOpen::append ? O_APPEND : 0;
  UniqueFd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | mode_flags, perm)};
  if (!f) {
    if (errno == ELOOP)
      return make_error("output_link", path + " is a symbolic link: output is written only as a plain file at its own "
                                              "path; pass the link's target");
    return make_error("output_open", "cannot write " + path + who(*as) + ": " + std::strerror(errno));
  }
  if (auto r = check_plain_file(f.get(), path); !r) return r.error();
  // Truncated only once known to be a plain file of one name (O_TRUNC at open would already
  // have emptied whatever the path named).
  if (how == OutputOpen::truncate && ::ftruncate(f.get(), 0) != 0)
    return make_error("output_open", "cannot truncate " + path + ": " + std::strerror(errno));
  return f.release();
}

Result<void> replace_user_file(const std::string& path, std::string_view contents, mode_t perm) {
  auto as = write_identity_for(path);
  if (!as) return as.error();
  auto scope = AsFsUser::enter(*as);
  if (!scope) return scope.error();
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());  // a leftover of an interrupted run (as the user: only theirs to remove)
  UniqueFd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm)};
  if (!f)
    return make_error("output_open", "cannot write " + tmp + who(*as) + ": " + std::strerror(errno) +
                                         " (check the folder exists and is writable)");
  auto written = write_all(f.get(), contents, tmp);
  if (written && ::fsync(f.get()) != 0) written = make_error("output_io", "writing " + tmp + " failed (disk full?)");
  f.reset();
  if (!written) {
    ::unlink(tmp.c_str());
    return written.error();
  }
  // rename() replaces a link at `path` itself, never what it points to.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error("output_open", "cannot replace " + path + who(*as) + ": " + std::strerror(err));
  }
  return {};
}

}  // namespace causeway
