#include "collector/symbolizer.h"

#include <cstdio>
#include <cstdlib>

#include "common/stack_text.h"

namespace causeway::collector {

namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL, kFnvPrime = 0x100000001b3ULL;

void fnv(uint64_t& h, const void* data, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * kFnvPrime;
}

// SQLite integers are signed: keep it positive and non-zero.
uint64_t finish_hash(uint64_t h) {
  h &= 0x7fffffffffffffffULL;
  return h ? h : 1;
}

std::string hex(const char* fmt, uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void Symbolizer::snapshot(uint32_t pid, std::optional<std::vector<Mapping>> early) {
  auto maps = read_maps(pid);
  if (maps.empty() && early) maps = std::move(*early);
  if (!maps.empty()) maps_[pid] = std::move(maps);
}

const Mapping* Symbolizer::mapping_of(uint32_t pid, uint64_t ip) {
  auto it = maps_.find(pid);
  const Mapping* m = it == maps_.end() ? nullptr : find_mapping(it->second, ip);
  if (!m) {
    snapshot(pid);  // a library loaded since the last snapshot
    it = maps_.find(pid);
    m = it == maps_.end() ? nullptr : find_mapping(it->second, ip);
  }
  return m;
}

std::vector<FrameLoc> Symbolizer::locate(uint32_t pid, const std::vector<uint64_t>& ips) {
  std::vector<FrameLoc> out;
  out.reserve(ips.size());
  for (uint64_t ip : ips) {
    FrameLoc loc;
    loc.ip = ip;
    const Mapping* m = mapping_of(pid, ip);
    const bool code = m && m->exec && (m->path[0] == '/' || m->path == "[vdso]" || m->path == "[vsyscall]");
    if (!code) {
      // A frame-pointer walk through code built without frame pointers reads a stack or heap
      // word as the next return address: everything from here on is made up.
      FrameLoc cut;
      cut.kind = FrameLoc::Kind::cut;
      out.push_back(std::move(cut));
      break;
    }
    if (m->path[0] == '/') {
      loc.in_file = true;
      loc.path = m->path;
      loc.open_path = "/proc/" + std::to_string(pid) + "/root" + m->path;
      loc.inode = m->inode;
      loc.file_off = ip - m->start + m->offset;
    } else {
      loc.region = m->path;
    }
    out.push_back(std::move(loc));
  }
  return out;
}

std::shared_ptr<const ElfFile> Symbolizer::elf_for(const FrameLoc& loc) {
  const std::string file_key = loc.path + ":" + std::to_string(loc.inode);
  if (auto it = key_of_file_.find(file_key); it != key_of_file_.end()) {
    auto e = elf_by_key_.find(it->second);
    return e == elf_by_key_.end() ? nullptr : e->second;
  }
  // Through the process's root first; the host path for processes that are gone.
  auto elf = ElfFile::load(loc.open_path);
  if (!elf) elf = ElfFile::load(loc.path);
  std::shared_ptr<const ElfFile> f = elf ? *elf : nullptr;
  std::string key = f && !f->build_id().empty() ? f->build_id() : file_key;
  key_of_file_[file_key] = key;
  if (auto e = elf_by_key_.find(key); e != elf_by_key_.end()) return e->second;
  elf_by_key_[key] = f;
  return f;
}

std::string Symbolizer::resolve(const FrameLoc& loc) {
  if (loc.kind == FrameLoc::Kind::cut) return std::string(kStackCutMarker);
  if (loc.kind == FrameLoc::Kind::python) return python_frame_text(loc.py.file, loc.py.line, loc.py.function);
  if (!loc.in_file) return (loc.region.empty() ? std::string() : loc.region + "+") + hex("0x%llx", loc.ip);
  const std::string module(base_name(loc.path));
  if (auto elf = elf_for(loc))
    if (auto vaddr = elf->offset_to_vaddr(loc.file_off))
      if (auto sym = elf->symbolize(*vaddr)) {
        std::string text = module + "!" + *sym;
        // A caller's frame holds the return address, which may already be the next line:
        // look up the call instruction's byte before it (not for a function's first byte).
        const size_t plus = sym->rfind("+0x");
        const uint64_t off = plus == std::string::npos ? 0 : std::strtoull(sym->c_str() + plus + 3, nullptr, 16);
        const uint64_t at = off == 0 ? *vaddr : *vaddr - 1, start = *vaddr - off;
        auto line = lines_.lookup(elf->path(), elf->build_id(), at, start);
        if (!line && elf->path() != loc.path) line = lines_.lookup(loc.path, elf->build_id(), at, start);  // the process is gone
        if (line)
          text += " (" + line->file + ":" + std::to_string(line->line) + ")";
        return text;
      }
  return module + hex("+0x%llx", loc.file_off);
}

std::vector<std::string> Symbolizer::resolve_stack(const std::vector<FrameLoc>& locs) {
  std::vector<std::string> native, python;
  bool cut = false;
  for (const FrameLoc& loc : locs) {
    if (loc.kind == FrameLoc::Kind::python) python.push_back(resolve(loc));
    else if (loc.kind == FrameLoc::Kind::cut) cut = true;
    else native.push_back(resolve(loc));
  }
  size_t at = native.size();
  for (size_t i = 0; i < native.size(); ++i)
    if (native[i].find("!_PyEval_EvalFrame") != std::string::npos) {
      at = i;
      break;
    }
  native.insert(native.begin() + static_cast<std::ptrdiff_t>(at), python.begin(), python.end());
  if (cut) native.emplace_back(kStackCutMarker);
  return native;
}

std::string Symbolizer::frame(uint32_t pid, uint64_t ip) { return resolve(locate(pid, {ip}).front()); }

std::vector<std::string> Symbolizer::frames(uint32_t pid, const std::vector<uint64_t>& ips) {
  std::vector<std::string> out;
  out.reserve(ips.size());
  for (const FrameLoc& loc : locate(pid, ips)) out.push_back(resolve(loc));
  return out;
}

uint64_t stack_hash(const std::vector<std::string>& frames) {
  uint64_t h = kFnvOffset;
  for (const auto& f : frames) {
    fnv(h, f.data(), f.size());
    h = (h ^ 0xff) * kFnvPrime;
  }
  return finish_hash(h);
}

uint64_t stack_hash(const std::vector<FrameLoc>& frames) {
  uint64_t h = kFnvOffset;
  for (const FrameLoc& f : frames) {
    if (f.kind == FrameLoc::Kind::python) {
      fnv(h, f.py.file.data(), f.py.file.size());
      fnv(h, f.py.function.data(), f.py.function.size());
      fnv(h, &f.py.line, sizeof f.py.line);
    } else if (f.kind == FrameLoc::Kind::cut) {
      fnv(h, "cut", 3);
    } else if (f.in_file) {
      fnv(h, f.path.data(), f.path.size());
      fnv(h, &f.inode, sizeof f.inode);
      fnv(h, &f.file_off, sizeof f.file_off);
    } else {
      fnv(h, f.region.data(), f.region.size());
      fnv(h, &f.ip, sizeof f.ip);
    }
    h = (h ^ 0xff) * kFnvPrime;
  }
  return finish_hash(h);
}

}  // namespace causeway::collector
