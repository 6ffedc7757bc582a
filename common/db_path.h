#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace causeway {

// The user who ran `sudo causeway …`: set only when running as root with SUDO_USER and a
// valid SUDO_UID/SUDO_GID. Files the collector makes belong to this user (see docs/COLLECTOR.md).
struct Invoker {
  uid_t uid;
  gid_t gid;
  std::string name;
  std::string home;  // from the passwd entry, not $HOME (sudo may keep root's HOME)
};
std::optional<Invoker> sudo_invoker();

// --db default: $CAUSEWAY_DB, else ${XDG_DATA_HOME:-$HOME/.local/share}/causeway/trace.db.
// Under sudo, $HOME is the invoker's home from the passwd entry, and $XDG_DATA_HOME counts
// only when it is a folder the invoker owns (sudo -E passes the user's own; a root
// XDG_DATA_HOME left in the environment must not redirect the user's trace).
std::string default_db_path();

}  // namespace causeway
