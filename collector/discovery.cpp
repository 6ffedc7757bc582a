#include "collector/discovery.h"

#include <dirent.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "collector/proc_maps.h"

namespace causeway::collector {

std::vector<uint32_t> list_pids() {
  std::vector<uint32_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    unsigned long v = std::strtoul(e->d_name, &end, 10);
    if (end && *end == '\0' && v > 0) pids.push_back(static_cast<uint32_t>(v));
  }
  ::closedir(d);
  return pids;
}

std::vector<FoundLib> scan_process(uint32_t pid) {
  std::vector<FoundLib> out;
  if (pid == static_cast<uint32_t>(::getpid())) return out;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (const Mapping& m : read_maps(pid)) {
    if (!m.exec || m.path.empty() || m.path[0] != '/') continue;
    auto kind = lib_kind_of(base_name(m.path));
    if (!kind) continue;
    if (!seen.insert({makedev(m.dev_major, m.dev_minor), m.inode}).second) continue;
    std::string path = m.path;
    // The mapping's own link: it opens the file the process maps, not whatever its path leads
    // to now (a FIFO bind-mounted over it, a swapped file, an upgrade that deleted it).
    char range[40];
    std::snprintf(range, sizeof range, "%lx-%lx", static_cast<unsigned long>(m.start), static_cast<unsigned long>(m.end));
    FoundLib f;
    f.open_path = "/proc/" + std::to_string(pid) + "/map_files/" + range;
    if (constexpr std::string_view del = " (deleted)"; path.size() > del.size() && path.ends_with(del))
      path.resize(path.size() - del.size());
    f.pid = pid;
    f.kind = *kind;
    f.path = path;
    f.dev = makedev(m.dev_major, m.dev_minor);
    f.inode = m.inode;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<FoundLib> scan_all(const std::vector<uint32_t>& only) {
  std::vector<FoundLib> out;
  for (uint32_t pid : only.empty() ? list_pids() : only) {
    auto found = scan_process(pid);
    out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  return out;
}

}  // namespace causeway::collector
