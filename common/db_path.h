// Where the trace DB lives by default, and who owns the files `trace` creates.
//
// `sudo causeway trace` must write the DB that the same user's `causeway mcp` / `explain` read
// with no flags (docs/COLLECTOR.md "Where the DB goes"): under sudo the default location is the
// invoking user's, and every folder and DB file the tracer creates belongs to that user.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/result.h"

namespace causeway {

// The user a root process acts for: the one sudo names (SUDO_USER, cross-checked against
// SUDO_UID/SUDO_GID and the passwd entry), only while the effective uid is 0.
struct InvokingUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  std::string home;  // from the passwd entry, never from $HOME (which sudo may leave as root's)
};
std::optional<InvokingUser> sudo_invoking_user();

// --db default: $CAUSEWAY_DB, else ${XDG_DATA_HOME:-$HOME/.local/share}/causeway/trace.db, where
// under sudo HOME is the invoking user's home from the passwd entry and XDG_DATA_HOME counts only
// when it lies inside that home (sudo -E would otherwise hand over root's or nobody's).
std::string default_db_path();

// Makes the DB's folder (missing components mode 0700) and the DB file itself (mode 0600) if
// absent, owned by the invoking user under sudo, else by the caller. An existing DB file owned
// by someone else than that user is refused ("db_owner"), never silently taken over: root
// writing into another user's file would leave it unreadable to its owner's tools, or let a
// symlink planted by that user point root at a file of the system. Fails with "db_owner" or
// "db_open".
Result<void> prepare_db_file(const std::string& path);

}  // namespace causeway
