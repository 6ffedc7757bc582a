#include "collector/source_lines.h"

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include "collector/proc_maps.h"
#include "common/unique_fd.h"

namespace causeway::collector {

// One DWARF reader over an open file; dwarf_end (the destructor's body) runs before the fd
// member closes.
struct SourceLines::Handle {
  UniqueFd fd;
  Dwarf* dw = nullptr;
  ~Handle() {
    if (dw) dwarf_end(dw);
  }
};

SourceLines::SourceLines() = default;
SourceLines::~SourceLines() = default;

void SourceLines::release() { open_.clear(); }

SourceLines::Handle* SourceLines::open(const std::string& path, const std::string& build_id) {
  if (auto it = open_.find(path); it != open_.end()) return it->second.get();
  auto h = std::make_unique<Handle>();
  h->fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (h->fd) h->dw = dwarf_begin(h->fd.get(), DWARF_C_READ);
  if (!h->dw && build_id.size() > 2) {
    // Distributions ship debug info apart: /usr/lib/debug/.build-id/ab/cdef….debug
    const std::string debug = "/usr/lib/debug/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
    h = std::make_unique<Handle>();
    h->fd.reset(::open(debug.c_str(), O_RDONLY | O_CLOEXEC));
    if (h->fd) h->dw = dwarf_begin(h->fd.get(), DWARF_C_READ);
  }
  if (!h->dw) h.reset();
  return (open_[path] = std::move(h)).get();
}

std::optional<SourceLine> SourceLines::lookup(const std::string& path, const std::string& build_id, uint64_t vaddr,
                                             uint64_t func_start) {
  Handle* h = open(path, build_id);
  if (!h) return std::nullopt;
  Dwarf_Die cu;
  bool found = dwarf_addrdie(h->dw, vaddr, &cu) != nullptr;
  if (!found) {
    // No .debug_aranges (clang, or gcc -gdwarf-5 without it): look through the CUs' ranges.
    Dwarf_Off off = 0, next;
    size_t header;
    while (!found && dwarf_nextcu(h->dw, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
      if (dwarf_offdie(h->dw, off + header, &cu) && dwarf_haspc(&cu, vaddr) == 1) found = true;
      off = next;
    }
  }
  if (!found) return std::nullopt;
  Dwarf_Lines* lines = nullptr;
  size_t n = 0;
  if (dwarf_getsrclines(&cu, &lines, &n) != 0 || n == 0) return std::nullopt;
  // The last row at or before vaddr (rows are sorted by address).
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    Dwarf_Addr a = 0;
    dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a);
    if (a <= vaddr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return std::nullopt;
  auto row = [&](size_t i, Dwarf_Addr& addr, const char*& src, int& line) {
    Dwarf_Line* l = dwarf_onesrcline(lines, i);
    src = dwarf_linesrc(l, nullptr, nullptr);
    return dwarf_lineaddr(l, &addr) == 0 && src && dwarf_lineno(l, &line) == 0 && line > 0;
  };
  Dwarf_Addr addr = 0;
  const char* src = nullptr;
  int line = 0;
  if (!row(lo - 1, addr, src, line)) return std::nullopt;
  SourceLine out{std::string(base_name(src)), line};
  // Inlined code: the row names the innermost inlined callee's line (an STL header, say), but
  // the frame is labelled with the function the address lies in. Where that function's own
  // source file (the CU's) has a row between the function's start and vaddr, the latest such
  // row is the line that made the inlined call — what `addr2line -i` prints last.
  const char* cu_file = dwarf_diename(&cu);
  if (!cu_file || base_name(src) == base_name(cu_file)) return out;
  for (size_t i = lo - 1; i-- > 0;) {
    if (!row(i, addr, src, line) || addr < func_start) break;
    if (base_name(src) == base_name(cu_file)) return SourceLine{std::string(base_name(src)), line};
  }
  return out;
}

}  // namespace causeway::collector
