// User stacks → frames "module!symbol+0xoff", or "module+0xoff" when no symbol covers the
// address — never dropped. Two halves, so the expensive one can run off the drain thread:
//   locate()  maps each address to (file, offset) through the process's maps snapshot —
//             cheap, and it must happen while the process is alive;
//   resolve() turns a located frame into text, loading the ELF file's symbols on first use
//             (tens of ms for a large library) — it needs only the file.
// Maps are snapshotted per process (a process that exits keeps its last snapshot); ELF files
// are cached by build id (else path+inode). locate() and resolve() touch disjoint state, so
// one thread may locate while another resolves; frame()/frames() do both on the caller's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/elf_file.h"
#include "collector/proc_maps.h"
#include "collector/python_runtime.h"
#include "collector/source_lines.h"

namespace causeway::collector {

// One stack address, located. Without a file-backed mapping only `ip` (and `region`, e.g.
// "[vdso]" or an anonymous JIT area's name) is known.
// A Python frame (python) carries its already-read file, function and line; `cut` is the mark
// that the native walk stopped (common/stack_text.h).
struct FrameLoc {
  enum class Kind { native, python, cut };
  Kind kind = Kind::native;
  PyFrame py;
  uint64_t ip = 0;
  bool in_file = false;
  std::string path;       // as mapped in the process
  std::string open_path;  // through /proc/PID/root, so containers resolve
  uint64_t inode = 0;
  uint64_t file_off = 0;
  std::string region;     // a non-file mapping's name, "" when none
};

class Symbolizer {
 public:
  // Takes (or refreshes) the maps snapshot of pid; call when a process is discovered.
  // early: its maps read sooner (collector/early_maps.h), used when the process is gone now.
  void snapshot(uint32_t pid, std::optional<std::vector<Mapping>> early = std::nullopt);
  void forget(uint32_t pid) { maps_.erase(pid); }

  // The native walk is cut at the first address outside file-backed code ([stack], heap,
  // anonymous memory, unmapped): it ends with a Kind::cut mark instead of a made-up frame.
  std::vector<FrameLoc> locate(uint32_t pid, const std::vector<uint64_t>& ips);
  // "module!symbol+0xoff", with " (file.cpp:LINE)" when the module has line tables.
  std::string resolve(const FrameLoc& loc);
  // Drops the DWARF readers resolve() opened (collector/source_lines.h).
  void release_lines() { lines_.release(); }
  // A whole stack to text. Python frames go where the interpreter's eval loop is in the
  // native frames (the first _PyEval_EvalFrame* frame), else where the native walk ended.
  std::vector<std::string> resolve_stack(const std::vector<FrameLoc>& locs);

  std::string frame(uint32_t pid, uint64_t ip);
  std::vector<std::string> frames(uint32_t pid, const std::vector<uint64_t>& ips);

  size_t cached_files() const { return elf_by_key_.size(); }

 private:
  const Mapping* mapping_of(uint32_t pid, uint64_t ip);
  std::shared_ptr<const ElfFile> elf_for(const FrameLoc& loc);

  std::unordered_map<uint32_t, std::vector<Mapping>> maps_;
  std::map<std::string, std::shared_ptr<const ElfFile>> elf_by_key_;  // build id or path:inode
  std::map<std::string, std::string> key_of_file_;                     // path:inode → key
  SourceLines lines_;
};

// FNV-1a over the frame strings (never 0).
uint64_t stack_hash(const std::vector<std::string>& frames);
// FNV-1a over the located frames (file, inode, offset; else the address): the stack's id in
// the `stacks` table, known before the frames are resolved to text (never 0). The same code
// path in two processes of the same binaries gets the same id.
uint64_t stack_hash(const std::vector<FrameLoc>& frames);

}  // namespace causeway::collector
