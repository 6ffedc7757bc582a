// Root acting on a user's files as that user. `sudo causeway trace` runs as root and writes
// into a folder the invoking user controls: every folder, file, lock, -wal and -shm made or
// removed there is made with the user's file-system identity (setfsuid/setfsgid and the
// user's groups), so a link the user planted leads only where the user could go anyway
// (docs/SECURITY.md "Root writing into a user's folder").
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

struct FsUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

// Who root writes the file at `path` as: nullopt = as itself (not root, or every existing
// component of the path belongs to root); the sudo invoker when they own a component (or a
// component belongs to nobody but root and them); without sudo, the one non-root user who owns
// components. Fails ("db_owner") when components belong to two users, or to a user other
// than the sudo invoker: whoever owns a folder can swap what is below it. Components are
// looked at with lstat, so a symlink counts as its owner's, not its target's.
Result<std::optional<FsUser>> write_identity_for(const std::string& path);

// While alive, the calling thread opens, creates and removes files as `user` (nullopt, or a
// process that is not root: no change). Per thread: the kernel keeps fsuid, fsgid and the
// groups per task, and neither setfsuid nor the raw setgroups syscall touches other threads,
// so the tracer's other threads keep root's access to /proc and the BPF file systems.
class AsFsUser {
 public:
  static Result<AsFsUser> enter(const std::optional<FsUser>& user);
  AsFsUser(AsFsUser&& other) noexcept;
  AsFsUser& operator=(AsFsUser&&) = delete;
  AsFsUser(const AsFsUser&) = delete;
  AsFsUser& operator=(const AsFsUser&) = delete;
  ~AsFsUser();

 private:
  AsFsUser() = default;
  bool active_ = false;
  uid_t old_uid_ = 0;
  gid_t old_gid_ = 0;
  std::vector<gid_t> old_groups_;
};

// "alice" or "uid 1234".
std::string user_name_of(uid_t uid);

}  // namespace causeway
