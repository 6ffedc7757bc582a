#include "common/user_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/db_path.h"
#include "common/fs_user.h"
#include "common/unique_fd.h"

namespace causeway {

namespace {

// Who opens it: the sudo invoker when root runs for one, else the process itself.
std::optional<FsUser> reader_for() {
  const auto inv = sudo_invoker();
  if (!inv) return std::nullopt;
  return FsUser{inv->uid, inv->gid, inv->name};
}

}  // namespace

Result<std::string> read_user_input(const std::string& path, const std::string& what, size_t max_bytes) {
  return read_file_as(reader_for(), path, what, max_bytes);
}

Result<std::string> read_file_as(const std::optional<FsUser>& user, const std::string& path, const std::string& what,
                                 size_t max_bytes) {
  UniqueFd f;
  {
    auto as_user = AsFsUser::enter(user);
    if (!as_user) return as_user.error();
    // O_NONBLOCK: a FIFO planted at the name must not hold the open; it is refused below.
    f.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  }
  if (!f)
    return make_error("input_open", "cannot read " + what + " " + path + (user ? " as " + user->name : "") + ": " +
                                        std::strerror(errno));
  struct stat st {};
  if (::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return make_error("input_type", what + " " + path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return make_error("input_size", what + " " + path + " is larger than " + std::to_string(max_bytes) + " bytes");
  std::string out;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error("input_io", "cannot read " + what + " " + path + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes)
      return make_error("input_size", what + " " + path + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  return out;
}

}  // namespace causeway
