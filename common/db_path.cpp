#include "common/db_path.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace causeway {
namespace {

std::optional<unsigned long> parse_id(const char* s) {
  if (!s || !*s) return std::nullopt;
  unsigned long v = 0;
  const char* end = s + std::strlen(s);
  auto [p, ec] = std::from_chars(s, end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// True when `path` is `dir` itself or lies below it, compared lexically after normalization
// (XDG_DATA_HOME must be absolute per the XDG spec; a relative one is ignored).
bool inside(const std::filesystem::path& path, const std::filesystem::path& dir) {
  if (!path.is_absolute()) return false;
  auto p = path.lexically_normal(), d = dir.lexically_normal();
  auto [dit, pit] = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
  return dit == d.end() || (std::next(dit) == d.end() && dit->empty());
}

std::string user_label(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{}, *res = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res) return std::string(res->pw_name);
  return "uid " + std::to_string(uid);
}

}  // namespace

std::optional<InvokingUser> sudo_invoking_user() {
  if (::geteuid() != 0) return std::nullopt;
  const char* name = std::getenv("SUDO_USER");
  if (!name || !*name) return std::nullopt;
  std::vector<char> buf(16384);
  passwd pw{}, *res = nullptr;
  if (getpwnam_r(name, &pw, buf.data(), buf.size(), &res) != 0 || !res) return std::nullopt;
  if (res->pw_uid == 0) return std::nullopt;  // sudo from root: root's own files
  // SUDO_UID is what sudo recorded; a mismatch with the passwd entry means the environment
  // was edited, and we would rather act as plain root than for the wrong user.
  if (auto uid = parse_id(std::getenv("SUDO_UID")); uid && *uid != res->pw_uid) return std::nullopt;
  InvokingUser u;
  u.uid = res->pw_uid;
  u.gid = res->pw_gid;
  if (auto gid = parse_id(std::getenv("SUDO_GID"))) u.gid = static_cast<gid_t>(*gid);
  u.name = res->pw_name;
  u.home = res->pw_dir ? res->pw_dir : "";
  if (u.home.empty()) return std::nullopt;
  return u;
}

std::string default_db_path() {
  if (const char* env = std::getenv("CAUSEWAY_DB"); env && *env) return env;
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::string base;
  if (auto u = sudo_invoking_user()) {
    base = (xdg && *xdg && inside(xdg, u->home)) ? std::string(xdg) : u->home + "/.local/share";
  } else if (xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.local/share";
  } else {
    base = ".";
  }
  return base + "/causeway/trace.db";
}

Result<void> prepare_db_file(const std::string& path) {
  namespace fs = std::filesystem;
  const auto user = sudo_invoking_user();
  const uid_t owner = user ? user->uid : ::geteuid();
  const gid_t group = user ? user->gid : ::getegid();

  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::vector<fs::path> missing;  // innermost first
  std::error_code ec;
  for (fs::path p = parent; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      return make_error("db_open", "cannot create folder " + it->string() + ": " + std::strerror(errno));
    if (user && ::chown(it->c_str(), owner, group) != 0)
      return make_error("db_open", "cannot give folder " + it->string() + " to " + user->name + ": " + std::strerror(errno));
  }

  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    if (st.st_uid != owner)
      return make_error("db_owner", path + " belongs to " + user_label(st.st_uid) + ", not to " + user_label(owner) +
                                        "; refusing to write into it. Pass --db with a path of your own (or chown it)");
    return {};
  }
  if (errno != ENOENT) return make_error("db_open", "cannot stat " + path + ": " + std::strerror(errno));
  // Made here rather than by SQLite so it has its owner from the start; SQLite running as root
  // gives the -wal and -shm files the owner of the DB file (os_unix.c robustFchown).
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return prepare_db_file(path);  // another process made it just now: check its owner
    return make_error("db_open", "cannot create " + path + ": " + std::strerror(errno));
  }
  int rc = user ? ::fchown(fd, owner, group) : 0;
  int saved = errno;
  ::close(fd);
  if (rc != 0) return make_error("db_open", "cannot give " + path + " to " + user->name + ": " + std::strerror(saved));
  return {};
}

}  // namespace causeway
