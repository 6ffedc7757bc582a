// Files a user names on the command line for root to read on their behalf, whose contents
// leave the process or act for it: `--password-file` (sent to the fleet store), `--token-file`,
// `--tls-cert`/`--tls-key` (served to every client), `--ca-file`. Under sudo they are opened
// with the invoking user's file-system identity (AsFsUser), so `sudo causeway ship --to
// http://anywhere --password-file /etc/shadow` cannot send root's file to a server of the
// user's choosing, nor `--tls-key` make root sign with a key only root may read
// (docs/SECURITY.md "Files root reads for a user").
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/fs_user.h"
#include "common/result.h"

namespace causeway {

// The whole file at `path`, at most `max_bytes`. Errors: "input_open" (cannot open it as the
// user: missing, or not theirs to read), "input_type" (not a regular file), "input_size"
// (larger than max_bytes), "input_io"; each names `what` (the flag) and the path.
Result<std::string> read_user_input(const std::string& path, const std::string& what, size_t max_bytes = 1 << 20);

// The same, opened as `reader` (nullopt: as the process): for files root made for a user and
// reads back as that user (the MCP server's generated certificate in its state folder).
Result<std::string> read_file_as(const std::optional<FsUser>& reader, const std::string& path, const std::string& what,
                                 size_t max_bytes = 1 << 20);

}  // namespace causeway
