#include "collector/servers.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "collector/netns.h"

namespace causeway::collector {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Socket inodes the process holds open.
std::vector<uint64_t> socket_inodes(uint32_t pid) {
  std::vector<uint64_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  char link[64];
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof(link) - 1);
    if (n <= 9) continue;
    link[n] = 0;
    if (std::string_view(link, 8) == "socket:[") out.push_back(std::strtoull(link + 8, nullptr, 10));
  }
  ::closedir(d);
  return out;
}

std::vector<uint32_t> all_pids() {
  std::vector<uint32_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9') out.push_back(static_cast<uint32_t>(std::strtoul(e->d_name, nullptr, 10)));
  ::closedir(d);
  return out;
}

}  // namespace

std::vector<std::pair<uint64_t, Endpoint>> parse_listeners(const std::string& text) {
  // "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
  std::vector<std::pair<uint64_t, Endpoint>> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout;
    uint64_t inode = 0;
    if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> inode)) continue;
    if (st != "0A") continue;  // TCP_LISTEN
    if (auto e = endpoint_from_proc_net(local)) out.emplace_back(inode, *e);
  }
  return out;
}

std::optional<ProcLink> read_proc_link(uint32_t pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%u/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = 0;
  // Fields after the parenthesised comm (which may hold spaces and parentheses): state, ppid,
  // pgrp, session, then 15 more up to starttime (field 22).
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return std::nullopt;
  p += 4;  // ") S "
  uint64_t f[19];
  for (uint64_t& v : f) {
    char* end = nullptr;
    v = std::strtoull(p, &end, 10);
    if (end == p) return std::nullopt;
    p = end;
  }
  return ProcLink{static_cast<uint32_t>(f[0]), static_cast<uint32_t>(f[2]), f[18]};
}

std::set<uint32_t> ServingTree::add(const std::set<uint32_t>& traced) {
  std::set<uint32_t> added;
  for (uint32_t pid : traced) {
    if (start_.count(pid)) continue;
    const auto link = read_proc_link(pid);
    if (!link) continue;
    start_[pid] = link->start_ticks;
    added.insert(pid);
    // Ancestors in the traced process's session: not the shell's sshd or init.
    uint32_t ppid = link->ppid;
    for (int depth = 0; depth < 8 && ppid > 1 && !start_.count(ppid); ++depth) {
      const auto up = read_proc_link(ppid);
      if (!up || up->sid != link->sid) break;
      start_[ppid] = up->start_ticks;
      added.insert(ppid);
      ppid = up->ppid;
    }
  }
  return added;
}

bool ServingTree::holds(uint32_t pid) const {
  auto it = start_.find(pid);
  if (it == start_.end()) return false;
  const auto link = read_proc_link(pid);
  return link && link->start_ticks == it->second;
}

std::set<uint32_t> ServingTree::pids() const {
  std::set<uint32_t> out;
  for (const auto& [pid, start] : start_) out.insert(pid);
  return out;
}

std::vector<Server> listeners_of(const std::set<uint32_t>& candidates, const std::function<bool(uint32_t)>& in_tree,
                                 const std::vector<uint16_t>& ports, uint32_t self) {
  // Listeners by socket inode, read once per network namespace (through any of its processes).
  std::map<uint64_t, Endpoint> listening;
  std::set<uint64_t> namespaces_read;
  auto read_namespace_of = [&](uint32_t pid, uint64_t ns) {
    if (ns == 0 || !namespaces_read.insert(ns).second) return;
    for (const char* table : {"/net/tcp", "/net/tcp6"})
      for (auto& [inode, at] : parse_listeners(slurp("/proc/" + std::to_string(pid) + table))) listening[inode] = at;
  };
  std::vector<Server> out;
  for (uint32_t pid : candidates) {
    // causeway itself is never a traced server: its /metrics endpoint's scrapes are not
    // requests (docs/INFERENCE.md).
    if (pid == self) continue;
    const std::vector<uint64_t> inodes = socket_inodes(pid);
    if (inodes.empty()) continue;
    const uint64_t netns = net_namespace_of(pid);
    read_namespace_of(pid, netns);
    const bool job = in_tree(pid);
    for (uint64_t inode : inodes) {
      auto it = listening.find(inode);
      if (it == listening.end()) continue;
      if (!job && std::find(ports.begin(), ports.end(), it->second.port) == ports.end()) continue;
      out.push_back({pid, it->second.port, it->second, netns});
    }
  }
  return out;
}

std::vector<Server> find_servers(const std::set<uint32_t>& traced, const std::vector<uint16_t>& ports, uint32_t self) {
  ServingTree tree;
  tree.add(traced);
  // Any listener in the tree; elsewhere only listeners on a --http-port port.
  std::set<uint32_t> candidates = tree.pids();
  if (!ports.empty())
    for (uint32_t pid : all_pids()) candidates.insert(pid);
  return listeners_of(candidates, [&](uint32_t pid) { return tree.has(pid); }, ports, self);
}

}  // namespace causeway::collector
