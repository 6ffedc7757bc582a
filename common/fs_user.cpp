#include "common/fs_user.h"

#include <grp.h>
#include <pwd.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <map>

#include "common/db_path.h"

namespace causeway {
namespace {

std::optional<passwd> passwd_of(uid_t uid, std::vector<char>& buf) {
  buf.resize(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found) return std::nullopt;
  return pw;
}

std::vector<gid_t> groups_of(const FsUser& user) {
  if (user.name.empty()) return {user.gid};
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  while (::getgrouplist(user.name.c_str(), user.gid, groups.data(), &n) < 0) {
    if (n <= static_cast<int>(groups.size())) return {user.gid};  // lookup failed, not "too small"
    groups.resize(static_cast<size_t>(n));
  }
  groups.resize(static_cast<size_t>(n));
  return groups;
}

// The raw syscall: glibc's setgroups() changes every thread of the process.
int thread_setgroups(const std::vector<gid_t>& groups) {
  return static_cast<int>(::syscall(SYS_setgroups, groups.size(), groups.data()));
}

}  // namespace

std::string user_name_of(uid_t uid) {
  std::vector<char> buf;
  if (auto pw = passwd_of(uid, buf)) return pw->pw_name;
  return "uid " + std::to_string(uid);
}

Result<std::optional<FsUser>> write_identity_for(const std::string& path) {
  if (::geteuid() != 0) return std::optional<FsUser>();
  std::string abs = path;
  if (abs.empty() || abs[0] != '/') {
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd)) return make_error("db_open", std::string("cannot tell the current folder: ") + std::strerror(errno));
    abs = std::string(cwd) + "/" + path;
  }
  // Owner → the group of the first component it owns (for a user without a passwd entry).
  std::map<uid_t, gid_t> owners;
  for (size_t end = abs.find('/', 1);; end = abs.find('/', end + 1)) {
    const std::string prefix = abs.substr(0, end);
    struct stat st {};
    if (::lstat(prefix.c_str(), &st) != 0) break;  // the rest is to be made
    if (st.st_uid != 0) owners.emplace(st.st_uid, st.st_gid);
    if (end == std::string::npos) break;
  }
  if (owners.empty()) return std::optional<FsUser>();
  const auto inv = sudo_invoker();
  for (const auto& [uid, gid] : owners) {
    const bool other = inv ? uid != inv->uid : uid != owners.begin()->first;
    if (other)
      return make_error("db_owner", path + " lies in (or is) a file of " + user_name_of(uid) +
                                        (inv ? ", not of " + inv->name : " and of " + user_name_of(owners.begin()->first)) +
                                        ": that user could redirect what root writes there; use a path in " +
                                        (inv ? "your own folder" : "one user's folder") + " or in a folder of root's");
  }
  if (inv) return std::optional<FsUser>(FsUser{inv->uid, inv->gid, inv->name});
  const auto [uid, gid] = *owners.begin();
  std::vector<char> buf;
  if (auto pw = passwd_of(uid, buf)) return std::optional<FsUser>(FsUser{uid, pw->pw_gid, pw->pw_name});
  return std::optional<FsUser>(FsUser{uid, gid, ""});
}

Result<AsFsUser> AsFsUser::enter(const std::optional<FsUser>& user) {
  AsFsUser scope;
  if (!user || ::geteuid() != 0) return scope;
  // setfsuid/setfsgid with an invalid id change nothing and return the current one.
  scope.old_uid_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1)));
  scope.old_gid_ = static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1)));
  const int n = ::getgroups(0, nullptr);
  scope.old_groups_.resize(static_cast<size_t>(n > 0 ? n : 0));
  if (n > 0 && ::getgroups(n, scope.old_groups_.data()) != n)
    return make_error("fs_identity", std::string("cannot read this thread's groups: ") + std::strerror(errno));
  if (thread_setgroups(groups_of(*user)) != 0)
    return make_error("fs_identity", "cannot take the groups of " + user->name + ": " + std::strerror(errno));
  scope.active_ = true;  // from here on the destructor puts root's identity back
  ::setfsgid(user->gid);
  ::setfsuid(user->uid);
  if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != user->uid ||
      static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != user->gid)
    return make_error("fs_identity", "cannot act as " + user_name_of(user->uid) + " on files");
  return scope;
}

AsFsUser::AsFsUser(AsFsUser&& other) noexcept
    : active_(other.active_), old_uid_(other.old_uid_), old_gid_(other.old_gid_), old_groups_(std::move(other.old_groups_)) {
  other.active_ = false;
}

AsFsUser::~AsFsUser() {
  if (!active_) return;
  // fsuid first: back at 0 the kernel gives the file capabilities back to the effective set.
  ::setfsuid(old_uid_);
  ::setfsgid(old_gid_);
  (void)thread_setgroups(old_groups_);
}

}  // namespace causeway
