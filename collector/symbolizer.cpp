#include "collector/symbolizer.h"

#include <cstdio>

namespace causeway::collector {

void Symbolizer::snapshot(uint32_t pid) {
  auto maps = read_maps(pid);
  if (!maps.empty()) maps_[pid] = std::move(maps);
}

std::shared_ptr<const ElfFile> Symbolizer::elf_for(uint32_t pid, const Mapping& m) {
  const std::string file_key = m.path + ":" + std::to_string(m.inode);
  if (auto it = key_of_file_.find(file_key); it != key_of_file_.end()) {
    auto e = elf_by_key_.find(it->second);
    return e == elf_by_key_.end() ? nullptr : e->second;
  }
  // Open through the process's root so containers resolve; fall back to the host path for
  // processes that are gone.
  auto elf = ElfFile::load("/proc/" + std::to_string(pid) + "/root" + m.path);
  if (!elf) elf = ElfFile::load(m.path);
  std::shared_ptr<const ElfFile> f = elf ? *elf : nullptr;
  std::string key = f && !f->build_id().empty() ? f->build_id() : file_key;
  key_of_file_[file_key] = key;
  if (auto e = elf_by_key_.find(key); e != elf_by_key_.end()) return e->second;
  elf_by_key_[key] = f;
  return f;
}

std::string Symbolizer::frame(uint32_t pid, uint64_t ip) {
  auto it = maps_.find(pid);
  const Mapping* m = it == maps_.end() ? nullptr : find_mapping(it->second, ip);
  if (!m) {
    snapshot(pid);  // a library loaded since the last snapshot
    it = maps_.find(pid);
    m = it == maps_.end() ? nullptr : find_mapping(it->second, ip);
  }
  char buf[64];
  if (!m || m->path.empty() || m->path[0] != '/') {
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(ip));
    return (m && !m->path.empty() ? m->path + "+" : std::string()) + buf;
  }
  const std::string module(base_name(m->path));
  const uint64_t file_off = ip - m->start + m->offset;
  if (auto elf = elf_for(pid, *m)) {
    if (auto vaddr = elf->offset_to_vaddr(file_off))
      if (auto sym = elf->symbolize(*vaddr)) return module + "!" + *sym;
  }
  std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(file_off));
  return module + buf;
}

std::vector<std::string> Symbolizer::frames(uint32_t pid, const std::vector<uint64_t>& ips) {
  std::vector<std::string> out;
  out.reserve(ips.size());
  for (uint64_t ip : ips) out.push_back(frame(pid, ip));
  return out;
}

uint64_t stack_hash(const std::vector<std::string>& frames) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& f : frames) {
    for (unsigned char c : f) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL;
  }
  // SQLite integers are signed: keep it positive and non-zero.
  h &= 0x7fffffffffffffffULL;
  return h ? h : 1;
}

}  // namespace causeway::collector
