// Per-version CPython struct offsets (x86-64, default GIL build). Each value is offsetof() of
// the named field, computed by compiling scripts/python_offsets.c against that version's
// headers (Include/ and Include/internal/ with Py_BUILD_CORE), i.e. from:
//   3.10: pycore_runtime.h (_PyRuntimeState), pycore_interp.h (PyInterpreterState.tstate_head),
//         cpython/pystate.h (PyThreadState), cpython/frameobject.h (PyFrameObject),
//         cpython/code.h (PyCodeObject), cpython/unicodeobject.h (PyASCIIObject)
//   3.11, 3.12: the same plus pycore_frame.h (_PyInterpreterFrame) and _PyCFrame
//   3.13: pycore_frame.h and cpython/pystate.h; a 3.13 process's own _Py_DebugOffsets (read
//         from the ELF file, python_runtime.cpp) take precedence and are checked against this.
// The layout of these fields is stable within a minor version (CPython keeps the ABI of
// patch releases); docs/COLLECTOR.md "Python frames" has the same table.
#include "collector/python_runtime.h"

#include <cstring>

namespace causeway::collector {

namespace {

struct Row {
  int minor;
  uint16_t interp_head, threads_head, ts_next, ts_thread_id, ts_frame, cframe_frame;
  uint16_t fr_previous, fr_code, fr_instr, fr_owner;
  uint16_t co_filename, co_name, co_qualname, co_firstlineno, co_linetable, co_code_adaptive;
  uint16_t ascii_data;
};

constexpr uint16_t kNone = CW_PY_NONE;

constexpr Row kRows[] = {
    // minor interp thr  next tid  frame cfr  prev code instr owner  file name qual first table adapt ascii
    {10, 32, 8, 8, 176, 24, kNone, 24, 32, 96, kNone, 104, 112, kNone, 40, 120, kNone, 48},
    {11, 40, 16, 8, 152, 56, 8, 48, 32, 56, 69, 112, 120, 128, 72, 136, 184, 48},
    {12, 40, 72, 8, 136, 56, 0, 8, 0, 56, 70, 112, 120, 128, 68, 136, 192, 40},
    {13, 632, 7344, 8, 152, 72, kNone, 8, 0, 56, 70, 112, 120, 128, 68, 136, 200, 40},
};

PyLayout from_row(const Row& r, std::string source) {
  PyLayout l;
  l.minor = r.minor;
  l.proc.interp_head = r.interp_head;
  l.proc.threads_head = r.threads_head;
  l.proc.ts_next = r.ts_next;
  l.proc.ts_thread_id = r.ts_thread_id;
  l.proc.ts_frame = r.ts_frame;
  l.proc.cframe_frame = r.cframe_frame;
  l.proc.fr_previous = r.fr_previous;
  l.proc.fr_code = r.fr_code;
  l.proc.fr_instr = r.fr_instr;
  l.proc.fr_owner = r.fr_owner;
  l.proc.instr_is_int = r.minor == 10;
  l.code.filename = r.co_filename;
  l.code.name = r.co_name;
  l.code.qualname = r.co_qualname;
  l.code.has_qualname = r.co_qualname != kNone;
  l.code.firstlineno = r.co_firstlineno;
  l.code.linetable = r.co_linetable;
  l.code.code_adaptive = r.co_code_adaptive;
  l.code.ascii_data = r.ascii_data;
  l.source = std::move(source);
  return l;
}

}  // namespace

std::optional<PyLayout> py_layout_table(int minor) {
  for (const Row& r : kRows)
    if (r.minor == minor) return from_row(r, "table (CPython 3." + std::to_string(minor) + " headers)");
  return std::nullopt;
}

std::optional<PyLayout> py_layout_from_debug_offsets(const uint8_t* data, size_t size, int minor) {
  // _Py_DebugOffsets (3.13 Include/internal/pycore_runtime.h): a cookie, then uint64 fields;
  // the indices below are field positions in that struct.
  constexpr size_t kFields = 71;
  if (size < kFields * 8 || std::memcmp(data, "xdebugpy", 8) != 0) return std::nullopt;
  auto u = [&](size_t i) {
    uint64_t v;
    std::memcpy(&v, data + i * 8, 8);
    return v;
  };
  const uint64_t version = u(1);
  if (((version >> 24) & 0xff) != 3 || static_cast<int>((version >> 16) & 0xff) != minor) return std::nullopt;
  if (u(2) != 0) return std::nullopt;  // free-threaded build: other layout, not supported
  for (size_t i : {5, 9, 21, 24, 23, 29, 30, 31, 33, 35, 36, 37, 38, 39, 43, 70})
    if (u(i) >= kNone) return std::nullopt;
  Row r{};
  r.minor = minor;
  r.interp_head = static_cast<uint16_t>(u(5));
  r.threads_head = static_cast<uint16_t>(u(9));
  r.ts_next = static_cast<uint16_t>(u(21));
  r.ts_thread_id = static_cast<uint16_t>(u(24));
  r.ts_frame = static_cast<uint16_t>(u(23));
  r.cframe_frame = kNone;
  r.fr_previous = static_cast<uint16_t>(u(29));
  r.fr_code = static_cast<uint16_t>(u(30));
  r.fr_instr = static_cast<uint16_t>(u(31));
  r.fr_owner = static_cast<uint16_t>(u(33));
  r.co_filename = static_cast<uint16_t>(u(35));
  r.co_name = static_cast<uint16_t>(u(36));
  r.co_qualname = static_cast<uint16_t>(u(37));
  r.co_linetable = static_cast<uint16_t>(u(38));
  r.co_firstlineno = static_cast<uint16_t>(u(39));
  r.co_code_adaptive = static_cast<uint16_t>(u(43));
  r.ascii_data = static_cast<uint16_t>(u(70));
  return from_row(r, "_Py_DebugOffsets of the interpreter");
}

}  // namespace causeway::collector
