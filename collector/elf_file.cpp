#include "collector/elf_file.h"

#include "collector/elf_handle.h"
#include "collector/lib_file.h"
#include "common/unique_fd.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace causeway::collector {
namespace {

std::string demangle(const char* name) {
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(digits[p[i] >> 4]);
    s.push_back(digits[p[i] & 15]);
  }
  return s;
}

}  // namespace

std::vector<uint8_t> xz_decompress(const uint8_t* data, size_t size) {
  std::vector<uint8_t> out(size * 4 + 4096);
  // MiniDebugInfo sections are small (KiBs to a few MiB); cap growth at 256 MiB.
  while (out.size() <= (256u << 20)) {
    uint64_t memlimit = UINT64_MAX;
    size_t in_pos = 0, out_pos = 0;
    lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, nullptr, data, &in_pos, size, out.data(), &out_pos, out.size());
    if (r == LZMA_OK || r == LZMA_STREAM_END) {
      out.resize(out_pos);
      return out;
    }
    if (r != LZMA_BUF_ERROR) return {};
    out.resize(out.size() * 2);
  }
  return {};
}

Result<std::shared_ptr<const ElfFile>> ElfFile::load(const std::string& path) {
  auto lib = OpenedLib::open(path);
  if (!lib) return lib.error();
  return lib->elf();
}

Result<std::shared_ptr<const ElfFile>> ElfFile::from_image(const void* image, size_t size, const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error("elf", "libelf initialisation failed");
  std::shared_ptr<ElfFile> f(new ElfFile());
  f->path_ = path;
  std::string err;
  if (!f->parse(image, size, false, err)) return make_error("elf_parse", path + ": " + err);
  f->finish();
  return std::shared_ptr<const ElfFile>(std::move(f));
}

bool ElfFile::parse(const void* image, size_t size, bool from_debugdata, std::string& err) {
  ElfPtr elf(elf_memory(static_cast<char*>(const_cast<void*>(image)), size));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) {
    err = "not an ELF file";
    return false;
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf.get(), &shstrndx) != 0) {
    err = "no section name table";
    return false;
  }
  if (!from_debugdata) {
    size_t nph = 0;
    elf_getphdrnum(elf.get(), &nph);
    for (size_t i = 0; i < nph; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf.get(), static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      segments_.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz, (ph.p_flags & PF_X) != 0});
    }
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* sname = elf_strptr(elf.get(), shstrndx, sh.sh_name);
    if (!sname) sname = "";
    if (sh.sh_type == SHT_NOTE && build_id_.empty() && !from_debugdata) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      size_t off = 0, name_off = 0, desc_off = 0;
      GElf_Nhdr nh;
      while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            std::memcmp(static_cast<char*>(d->d_buf) + name_off, "GNU", 4) == 0) {
          build_id_ = hex(static_cast<uint8_t*>(d->d_buf) + desc_off, nh.n_descsz);
          break;
        }
      }
    } else if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) && sh.sh_entsize) {
      if (sh.sh_type == SHT_SYMTAB) has_symtab_ = true;
      Elf_Data* d = elf_getdata(scn, nullptr);
      size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 0; i < n; ++i) {
        GElf_Sym s;
        if (!gelf_getsym(d, static_cast<int>(i), &s)) continue;
        if (GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC) continue;
        if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
        const char* name = elf_strptr(elf.get(), sh.sh_link, s.st_name);
        if (!name || !*name) continue;
        syms_.push_back({s.st_value, s.st_size, name});
      }
    } else if (!from_debugdata && std::strcmp(sname, ".gnu_debugdata") == 0) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d && d->d_size) {
        auto inner = xz_decompress(static_cast<const uint8_t*>(d->d_buf), d->d_size);
        std::string inner_err;
        if (!inner.empty() && parse(inner.data(), inner.size(), true, inner_err)) has_debugdata_ = true;
      }
    }
  }
  return true;
}

void ElfFile::finish() {
  std::sort(syms_.begin(), syms_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    return a.vaddr != b.vaddr ? a.vaddr < b.vaddr : a.size > b.size;
  });
  // Same address from .symtab and .dynsym (or aliases): keep every name for lookups by name,
  // but the first (largest) one answers address lookups.
  for (size_t i = 0; i < syms_.size(); ++i) by_name_.emplace(syms_[i].name, i);
}

std::optional<ElfSymbol> ElfFile::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return syms_[it->second];
}

std::optional<uint64_t> ElfFile::vaddr_to_offset(uint64_t vaddr) const {
  for (const auto& s : segments_)
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz) return vaddr - s.vaddr + s.offset;
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::offset_to_vaddr(uint64_t offset) const {
  for (const auto& s : segments_)
    if (offset >= s.offset && offset < s.offset + s.filesz) return offset - s.offset + s.vaddr;
  return std::nullopt;
}

std::optional<std::string> ElfFile::symbolize(uint64_t vaddr) const {
  auto it = std::upper_bound(syms_.begin(), syms_.end(), vaddr,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.vaddr; });
  if (it == syms_.begin()) return std::nullopt;
  --it;
  // Walk back over same-address aliases to the first (largest) entry.
  while (it != syms_.begin() && std::prev(it)->vaddr == it->vaddr) --it;
  const uint64_t off = vaddr - it->vaddr;
  if (it->size ? off >= it->size : off > 4096) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(off));
  return demangle(it->name.c_str()) + buf;
}

std::vector<uint8_t> ElfFile::read_bytes(uint64_t offset, size_t n) const {
  std::vector<uint8_t> out(n);
  const UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  const ssize_t got = ::pread(fd.get(), out.data(), n, static_cast<off_t>(offset));
  out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return out;
}

}  // namespace causeway::collector
