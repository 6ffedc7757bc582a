#include "collector/python_runtime.h"

#include <fcntl.h>
#include <gelf.h>

#include "collector/elf_handle.h"
#include <unistd.h>

#include <cstring>
#include <regex>

namespace causeway::collector {

namespace {

// What detection needs from the interpreter's ELF file: _PyRuntime and Py_Version, as file
// offsets, and the bytes there.
struct PyElf {
  bool has_runtime = false;              // the symbol exists (3.7-3.9 keep it in .bss)
  std::optional<uint64_t> runtime_off;   // in the file's initialised data (3.10+)
  std::optional<uint64_t> version_off;
};

std::optional<uint64_t> vaddr_to_off(Elf* elf, uint64_t vaddr) {
  size_t n = 0;
  if (elf_getphdrnum(elf, &n) != 0) return std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) return vaddr - ph.p_vaddr + ph.p_offset;
  }
  return std::nullopt;
}

PyElf scan_elf(int fd) {
  PyElf out;
  if (elf_version(EV_CURRENT) == EV_NONE) return out;
  ElfPtr elf(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return out;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; d && i < count; ++i) {
      GElf_Sym s;
      if (!gelf_getsym(d, static_cast<int>(i), &s) || GELF_ST_TYPE(s.st_info) != STT_OBJECT || !s.st_value) continue;
      const char* name = elf_strptr(elf.get(), sh.sh_link, s.st_name);
      if (!name) continue;
      if (!out.has_runtime && std::strcmp(name, "_PyRuntime") == 0) {
        out.has_runtime = true;
        out.runtime_off = vaddr_to_off(elf.get(), s.st_value);
      }
      if (!out.version_off && std::strcmp(name, "Py_Version") == 0) out.version_off = vaddr_to_off(elf.get(), s.st_value);
    }
  }
  return out;
}

std::vector<uint8_t> pread_bytes(int fd, uint64_t off, size_t n) {
  std::vector<uint8_t> buf(n);
  const ssize_t got = pread(fd, buf.data(), n, static_cast<off_t>(off));
  buf.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return buf;
}

// "python3.10", "libpython3.10.so.1.0", "python3.10d" → 10; -1 when the name has no version.
int minor_from_name(std::string_view name) {
  static const std::regex re(R"(^(lib)?python3\.(\d+))");
  std::cmatch m;
  const std::string s(name);
  if (!std::regex_search(s.c_str(), m, re)) return -1;
  return std::stoi(m[2].str());
}

bool looks_like_python(std::string_view base) {
  return base.rfind("python3", 0) == 0 || base.rfind("libpython3", 0) == 0;
}

}  // namespace

PyProcess detect_python(uint32_t pid, const std::vector<Mapping>& maps) {
  PyProcess out;
  std::string seen;
  for (const Mapping& m : maps) {
    if (m.path.empty() || m.path[0] != '/' || m.path == seen) continue;
    const std::string_view base = base_name(m.path);
    if (!looks_like_python(base)) continue;
    seen = m.path;
    const UniqueFd fd(open(("/proc/" + std::to_string(pid) + "/root" + m.path).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    const PyElf pe = scan_elf(fd.get());
    if (!pe.has_runtime) continue;  // e.g. the python3 launcher of a libpython build
    out.binary = m.path;
    int minor = minor_from_name(base);
    if (pe.version_off) {
      const auto v = pread_bytes(fd.get(), *pe.version_off, 4);
      if (v.size() == 4) {
        uint32_t hex;
        std::memcpy(&hex, v.data(), 4);
        if ((hex >> 24) == 3) minor = static_cast<int>((hex >> 16) & 0xff);
      }
    }
    if (minor < 0) {
      out.status = PyStatus::unsupported;
      out.why = "CPython of unknown version (no Py_Version, no version in the file name)";
      return out;
    }
    out.version = "3." + std::to_string(minor);
    std::optional<PyLayout> layout;
    if (!pe.runtime_off) {
      layout = std::nullopt;  // not in the file's data: not a layout the table knows
    } else if (minor >= 13) {
      const auto dbg = pread_bytes(fd.get(), *pe.runtime_off, 71 * 8);
      layout = py_layout_from_debug_offsets(dbg.data(), dbg.size(), minor);
      if (!layout) {
        out.status = PyStatus::unsupported;
        out.why = "CPython " + out.version + ": no usable _Py_DebugOffsets (free-threaded build?)";
        return out;
      }
    } else {
      layout = py_layout_table(minor);
    }
    if (!layout) {
      out.status = PyStatus::unsupported;
      out.why = "CPython " + out.version + " is not in the offset table (3.10-3.13 are)";
      return out;
    }
    // _PyRuntime's address: the mapping of the same file covering its file offset.
    for (const Mapping& d : maps) {
      if (d.path != m.path || *pe.runtime_off < d.offset || *pe.runtime_off >= d.offset + (d.end - d.start)) continue;
      layout->proc.runtime = d.start + (*pe.runtime_off - d.offset);
      out.layout = std::move(*layout);
      out.status = PyStatus::supported;
      return out;
    }
    out.status = PyStatus::unsupported;
    out.why = "CPython " + out.version + ": _PyRuntime is not mapped";
    return out;
  }
  return out;
}

namespace {

// Unsigned varint of the 3.11+ location table: 6-bit chunks, 0x40 = more.
uint64_t read_varint(const std::vector<uint8_t>& t, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < t.size() && shift < 64; shift += 6) {
    const uint8_t b = t[i++];
    v |= static_cast<uint64_t>(b & 0x3f) << shift;
    if (!(b & 0x40)) break;
  }
  return v;
}

int64_t read_svarint(const std::vector<uint8_t>& t, size_t& i) {
  const uint64_t v = read_varint(t, i);
  return (v & 1) ? -static_cast<int64_t>(v >> 1) : static_cast<int64_t>(v >> 1);
}

}  // namespace

int py_line_for(int minor, const std::vector<uint8_t>& t, int firstlineno, uint64_t index) {
  if (minor == 10) {
    // PEP 626 (3.10 Objects/lnotab_notes.txt): (bytecode bytes, signed line delta) pairs;
    // a delta of -128 means "no line". Offsets are bytes, two per code unit.
    const uint64_t addr = index * 2;
    int64_t line = firstlineno;
    uint64_t end = 0;
    for (size_t i = 0; i + 1 < t.size(); i += 2) {
      const uint64_t start = end;
      end += t[i];
      const auto ldelta = static_cast<int8_t>(t[i + 1]);
      if (ldelta != -128) line += ldelta;
      if (t[i] && addr >= start && addr < end) return ldelta == -128 ? 0 : static_cast<int>(line);
    }
    return 0;
  }
  // 3.11+ location table (Objects/locations.md): entries of 1..8 code units, each starting
  // with a byte 1cccclll: code c, length l+1.
  int64_t line = firstlineno;
  uint64_t unit = 0;
  size_t i = 0;
  while (i < t.size()) {
    const uint8_t first = t[i++];
    if (!(first & 0x80)) return 0;  // lost sync: not a location table
    const int code = (first >> 3) & 0xf;
    const uint64_t len = (first & 7) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;
    } else if (code == 14) {
      line += read_svarint(t, i);
      read_varint(t, i);
      read_varint(t, i);
      read_varint(t, i);
    } else if (code == 13) {
      line += read_svarint(t, i);
    } else if (code >= 10) {
      line += code - 10;
      i += 2;
    } else {
      i += 1;
    }
    if (index >= unit && index < unit + len) return has_line ? static_cast<int>(line) : 0;
    unit += len;
  }
  return 0;
}

void PyCodeReader::forget(uint32_t pid) {
  fds_.erase(pid);
  codes_.erase(codes_.lower_bound({pid, 0}), codes_.upper_bound({pid, UINT64_MAX}));
}

std::shared_ptr<const PyCodeReader::Code> PyCodeReader::code(uint32_t pid, const PyLayout& l, uint64_t addr) {
  if (auto it = codes_.find({pid, addr}); it != codes_.end()) return it->second;
  auto fit = fds_.find(pid);
  if (fit == fds_.end()) {
    UniqueFd mem(open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
    if (!mem) return nullptr;
    fit = fds_.emplace(pid, std::move(mem)).first;
  }
  const int fd = fit->second.get();
  auto u64 = [&](uint64_t a) -> std::optional<uint64_t> {
    uint64_t v;
    if (pread(fd, &v, 8, static_cast<off_t>(a)) != 8) return std::nullopt;
    return v;
  };
  // A compact ASCII str (every identifier and nearly every path); others are not decoded.
  auto str = [&](uint64_t obj) -> std::optional<std::string> {
    uint8_t head[40];
    if (!obj || pread(fd, head, sizeof head, static_cast<off_t>(obj)) != sizeof head) return std::nullopt;
    uint64_t len;
    uint32_t state;
    std::memcpy(&len, head + 16, 8);
    std::memcpy(&state, head + 32, 4);
    const bool compact = state & (1u << 5), ascii = state & (1u << 6);
    if (!compact || !ascii || len > 4096) return std::string("<non-ascii>");
    std::string s(len, '\0');
    if (len && pread(fd, s.data(), len, static_cast<off_t>(obj + l.code.ascii_data)) != static_cast<ssize_t>(len))
      return std::nullopt;
    return s;
  };
  const auto file_obj = u64(addr + l.code.filename);
  const auto name_obj = u64(addr + (l.code.has_qualname ? l.code.qualname : l.code.name));
  const auto table_obj = u64(addr + l.code.linetable);
  int32_t first = 0;
  if (!file_obj || !name_obj || !table_obj ||
      pread(fd, &first, 4, static_cast<off_t>(addr + l.code.firstlineno)) != 4)
    return nullptr;
  auto file = str(*file_obj);
  auto name = str(*name_obj);
  if (!file || !name) return nullptr;
  auto c = std::make_shared<Code>();
  c->file = std::move(*file);
  c->function = std::move(*name);
  c->firstlineno = first;
  // PyBytesObject: ob_size at 16, bytes at 32 (PyVarObject + ob_shash) in 3.10-3.13.
  if (auto n = u64(*table_obj + 16); n && *n < (1u << 20)) c->linetable = pread_bytes(fd, *table_obj + 32, *n);
  c->first_instr = l.code.code_adaptive == CW_PY_NONE ? 0 : addr + l.code.code_adaptive;
  std::shared_ptr<const Code> cc = std::move(c);
  codes_[{pid, addr}] = cc;
  return cc;
}

std::optional<PyFrame> PyCodeReader::frame(uint32_t pid, const PyLayout& l, uint64_t code_addr, uint64_t instr) {
  auto c = code(pid, l, code_addr);
  if (!c) return std::nullopt;
  PyFrame f{c->file, c->function, 0};
  // 3.10: f_lasti is already a code-unit index; 3.11+: a pointer into co_code_adaptive.
  uint64_t index = instr;
  if (l.minor >= 11) index = instr >= c->first_instr ? (instr - c->first_instr) / 2 : UINT64_MAX;
  if (index != UINT64_MAX) f.line = py_line_for(l.minor, c->linetable, c->firstlineno, index);
  return f;
}

}  // namespace causeway::collector
