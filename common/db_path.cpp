#include "common/db_path.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <vector>

namespace causeway {
namespace {

std::optional<unsigned long> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  unsigned long n = 0;
  auto [end, ec] = std::from_chars(v, v + std::char_traits<char>::length(v), n);
  if (ec != std::errc() || *end) return std::nullopt;
  return n;
}

}  // namespace

std::optional<Invoker> sudo_invoker() {
  if (::geteuid() != 0) return std::nullopt;
  const char* user = std::getenv("SUDO_USER");
  auto uid = env_number("SUDO_UID");
  auto gid = env_number("SUDO_GID");
  if (!user || !*user || !uid || !gid || *uid == 0) return std::nullopt;
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(static_cast<uid_t>(*uid), &pw, buf.data(), buf.size(), &found) != 0 || !found || !pw.pw_dir ||
      !*pw.pw_dir)
    return std::nullopt;
  return Invoker{static_cast<uid_t>(*uid), static_cast<gid_t>(*gid), user, pw.pw_dir};
}

std::string default_db_path() {
  if (const char* env = std::getenv("CAUSEWAY_DB"); env && *env) return env;
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::string base;
  if (auto inv = sudo_invoker()) {
    struct stat st {};
    if (xdg && *xdg && ::stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == inv->uid) base = xdg;
    else base = inv->home + "/.local/share";
  } else if (xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.local/share";
  } else {
    base = ".";
  }
  return base + "/causeway/trace.db";
}

}  // namespace causeway
