// Opening a library or executable that a traced process maps, when the tracer is root and the
// process is anyone's. Its user controls the path (inside `unshare -Urm` they may bind-mount a
// FIFO over it, or swap the file after we parsed it), so the file is opened O_NONBLOCK (a FIFO
// cannot block the open), O_NOFOLLOW where the path comes from the process, checked to be a
// regular file with the mapping's inode, parsed from that one open file description, and
// probed through /proc/self/fd/N: the uprobe lands on the file we parsed. Open and parse run
// on a helper thread with a deadline, so a FUSE server that never answers stalls only that
// thread (docs/SECURITY.md "Library files").
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collector/elf_file.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace causeway::collector {

struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
};

struct LibOpenOptions {
  std::optional<FileId> expect;  // the mapping's device and inode (/proc/PID/maps)
  bool check_dev = true;         // false through /proc/PID/map_files (see lib_file.cpp)
  bool nofollow = false;         // refuse a symbolic link as the last component
  std::chrono::milliseconds timeout{10000};
};

class OpenedLib {
 public:
  // Fails with "lib_open" (cannot open, not a regular file, another inode than the mapping,
  // timed out) or "elf_parse".
  static Result<OpenedLib> open(const std::string& path, const LibOpenOptions& options = {});

  OpenedLib(OpenedLib&& other) noexcept = default;
  OpenedLib& operator=(OpenedLib&&) = delete;

  FileId id() const { return id_; }
  const std::shared_ptr<const ElfFile>& elf() const { return elf_; }
  // The path that names this open file and no other: for uprobe attach (the kernel resolves
  // it when the probe is made, while this object lives).
  std::string fd_path() const;
  // Up to n bytes at a file offset, from the same open file.
  std::vector<uint8_t> read_at(uint64_t offset, size_t n) const;

 private:
  OpenedLib() = default;
  UniqueFd fd_;
  FileId id_;
  std::shared_ptr<const ElfFile> elf_;
};

}  // namespace causeway::collector
