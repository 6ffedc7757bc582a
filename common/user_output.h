// Output files a user names on the command line (`export -o`, `report -o`, `mcp
// --audit-log`, `trace --ready-file`). Under sudo root makes them as the user they are for
// (write_identity_for, AsFsUser: docs/SECURITY.md "Root writing into a user's folder"), never
// through a link at the last component (O_NOFOLLOW), and only as regular files with one
// name: a planted link or hard link to a root file is refused, not written through.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway {

enum class OutputOpen : uint8_t { truncate, append };

// An fd open for writing at `path` (the caller owns it; O_CLOEXEC). Errors: "output_link"
// (a symbolic link, not a regular file, or a hard-linked file), "output_open", and those of
// write_identity_for / AsFsUser.
Result<int> open_user_output(const std::string& path, OutputOpen how, mode_t perm);

// Replaces `path` with `contents` whole: written to a new file beside it (made as the user,
// O_EXCL) and renamed over it as the user, so a reader never sees half of it. "output_io"
// when the disk is full.
Result<void> replace_user_file(const std::string& path, std::string_view contents, mode_t perm);

}  // namespace causeway
