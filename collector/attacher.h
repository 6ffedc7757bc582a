// Attaches the probe table to a library file, once per file (device + inode): symbol →
// file offset, endbr64 skipped (a probe on it is single-stepped: ~18 µs/call instead of
// ~1 µs), and any probe whose first instruction the kernel cannot emulate is reported slow.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collector/bpf_loader.h"
#include "collector/lib_file.h"
#include "collector/probe_table.h"
#include "common/result.h"

namespace causeway::collector {

struct AttachedLib {
  std::string path;      // as attached (may be /proc/PID/root/…)
  std::string display;   // as the process sees it
  LibKind kind;
  std::string build_id;
  int probes = 0;        // functions probed (entry + return each)
  std::vector<std::string> missing;  // symbols of the table absent from this file
  std::vector<std::string> slow;     // "symbol (first insn 48 89 ..)"
  int64_t attach_us = 0;             // time to attach every probe (links made, probes live)
};

// Where to put a uprobe in a function whose code starts with `code`: the byte offset past an
// endbr64, and whether the instruction there is one x86 uprobes emulate (push, nop, jmp,
// call) rather than single-step.
struct EntryPlan {
  uint64_t skip = 0;
  bool fast = true;
};
EntryPlan plan_entry(const std::vector<uint8_t>& code);

class Attacher {
 public:
  explicit Attacher(BpfObject& bpf) : bpf_(bpf) {}

  // Attaches every probe of the library's kind; a no-op (returns nullptr-free ok) when this
  // file was attached before. `display` is the path the process maps. The file is opened,
  // checked and parsed once (OpenedLib: `how` gives the mapping's inode) and every probe is
  // attached through that open file.
  Result<const AttachedLib*> attach(const std::string& path, const std::string& display, LibKind kind,
                                    const LibOpenOptions& how = {});
  const std::vector<AttachedLib>& libs() const { return libs_; }
  bool attached(uint64_t dev, uint64_t inode) const { return files_.count({dev, inode}) > 0; }

 private:
  BpfObject& bpf_;
  std::set<std::pair<uint64_t, uint64_t>> files_;
  std::vector<AttachedLib> libs_;
};

}  // namespace causeway::collector
