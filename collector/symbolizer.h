// User stacks → frames "module!symbol+0xoff", or "module+0xoff" when no symbol covers the
// address — never dropped. Maps are snapshotted per process (so a process that exits keeps
// its symbols: its last snapshot stays); ELF files are cached by build id (else path+inode).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/elf_file.h"
#include "collector/proc_maps.h"

namespace causeway::collector {

class Symbolizer {
 public:
  // Takes (or refreshes) the maps snapshot of pid; call when a process is discovered.
  void snapshot(uint32_t pid);
  void forget(uint32_t pid) { maps_.erase(pid); }

  std::string frame(uint32_t pid, uint64_t ip);
  std::vector<std::string> frames(uint32_t pid, const std::vector<uint64_t>& ips);

  size_t cached_files() const { return elf_by_key_.size(); }

 private:
  std::shared_ptr<const ElfFile> elf_for(uint32_t pid, const Mapping& m);

  std::unordered_map<uint32_t, std::vector<Mapping>> maps_;
  std::map<std::string, std::shared_ptr<const ElfFile>> elf_by_key_;  // build id or path:inode
  std::map<std::string, std::string> key_of_file_;                     // path:inode → key
};

// FNV-1a over the frame strings: the stack's id in the `stacks` table (never 0).
uint64_t stack_hash(const std::vector<std::string>& frames);

}  // namespace causeway::collector
