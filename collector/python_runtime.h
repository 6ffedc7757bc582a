// CPython processes: which interpreter a process runs (the `_PyRuntime` symbol in its executable
// or libpython3.X.so), the struct offsets the BPF walker needs (bpf/python.bpf.h), and reading
// a captured frame's code object from /proc/PID/mem to name its file, function and the line
// executing. Offsets: 3.13's own _Py_DebugOffsets when present, else the table of
// python_offsets.cpp (derived from each version's headers; docs/COLLECTOR.md "Python frames").
// An interpreter the table does not know is reported and never read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bpf/events.h"
#include "collector/proc_maps.h"
#include "common/unique_fd.h"

namespace causeway::collector {

// Offsets of the code and string objects user space reads (bytes).
struct PyCodeLayout {
  uint16_t filename = 0, name = 0, qualname = 0, firstlineno = 0, linetable = 0;
  uint16_t code_adaptive = 0;   // first code unit (3.11+)
  uint16_t ascii_data = 0;      // sizeof(PyASCIIObject): where a compact ASCII string's bytes start
  bool has_qualname = false;
};

struct PyLayout {
  int minor = 0;             // 3.minor
  cw_py_proc proc{};         // runtime left 0
  PyCodeLayout code;
  std::string source;        // where the offsets come from
};

// The table for 3.minor, nullopt when the version is not known.
std::optional<PyLayout> py_layout_table(int minor);
// Offsets from 3.13+'s _Py_DebugOffsets (the first bytes of _PyRuntime's initial data);
// nullopt when the cookie or version does not match or the build is free-threaded.
std::optional<PyLayout> py_layout_from_debug_offsets(const uint8_t* data, size_t size, int minor);

enum class PyStatus { not_python, supported, unsupported };

struct PyProcess {
  PyStatus status = PyStatus::not_python;
  std::string binary;       // file holding _PyRuntime
  std::string version;      // "3.12"
  std::string why;          // unsupported: the reason
  PyLayout layout;          // supported: with layout.proc.runtime set
};

// Looks for a CPython interpreter in the process's mappings.
PyProcess detect_python(uint32_t pid, const std::vector<Mapping>& maps);

// One Python frame, resolved to text-ready parts.
struct PyFrame {
  std::string file;
  std::string function;
  int line = 0;  // 0: unknown
};

// The executing line for code unit `index` (3.11+ location table, 3.10 PEP 626 table).
int py_line_for(int minor, const std::vector<uint8_t>& linetable, int firstlineno, uint64_t index);

// Reads code objects of live processes through /proc/PID/mem, cached per (pid, code address).
class PyCodeReader {
 public:
  // The frame for a captured (code, instr) pair; nullopt when the process is gone or the
  // memory is not a readable code object.
  std::optional<PyFrame> frame(uint32_t pid, const PyLayout& layout, uint64_t code, uint64_t instr);
  void forget(uint32_t pid);

 private:
  struct Code {
    std::string file, function;
    int firstlineno = 0;
    std::vector<uint8_t> linetable;
    uint64_t first_instr = 0;  // address of the first code unit (3.11+)
  };
  std::shared_ptr<const Code> code(uint32_t pid, const PyLayout& layout, uint64_t addr);

  std::map<std::pair<uint32_t, uint64_t>, std::shared_ptr<const Code>> codes_;
  std::map<uint32_t, UniqueFd> fds_;  // /proc/PID/mem, kept open while the process is known
};

}  // namespace causeway::collector
