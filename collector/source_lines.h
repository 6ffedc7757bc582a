// file:line of native addresses from DWARF (.debug_line), through elfutils libdw: the frame
// "cw_workload!run_step+0x1f" becomes "cw_workload!run_step+0x1f (workload.cpp:142)" when the
// module was built with -g (or its separate debug file sits under /usr/lib/debug/.build-id).
//
// Only the resolver thread uses it, and only for the frames of stacks being stored (a few per
// call site, not per call), so a line table is read only for a CU a stored stack runs through.
// The DWARF handles are dropped whenever the resolver runs out of work (release()): a module's
// debug info can be far larger than its symbols, and the collector keeps a fixed memory budget
// (docs/COLLECTOR.md "Symbolization").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace causeway::collector {

struct SourceLine {
  std::string file;  // the source file's name, without its folders
  int line = 0;
};

class SourceLines {
 public:
  SourceLines();
  ~SourceLines();
  SourceLines(const SourceLines&) = delete;
  SourceLines& operator=(const SourceLines&) = delete;

  // The line of vaddr in the ELF file at path (build_id: its lowercase hex build id, "" when
  // none, to find a separate debug file), in the function starting at func_start (inlined
  // code is reported at its call site in that function). nullopt without debug info there.
  std::optional<SourceLine> lookup(const std::string& path, const std::string& build_id, uint64_t vaddr,
                                   uint64_t func_start);
  // Closes every open DWARF handle (their memory goes back).
  void release();

 private:
  struct Handle;
  Handle* open(const std::string& path, const std::string& build_id);
  std::map<std::string, std::unique_ptr<Handle>> open_;  // path → handle (null handle: no DWARF)
};

}  // namespace causeway::collector
