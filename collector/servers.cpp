#include "collector/servers.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
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

// ppid and session id from /proc/PID/stat (fields 4 and 6, after the parenthesised comm).
bool parent_and_session(uint32_t pid, uint32_t& ppid, uint32_t& sid) {
  const std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t rp = s.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream in(s.substr(rp + 2));
  char state;
  long pgrp;
  return static_cast<bool>(in >> state >> ppid >> pgrp >> sid);
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

std::vector<Server> find_servers(const std::set<uint32_t>& traced, const std::vector<uint16_t>& ports, uint32_t self) {
  // Listeners by socket inode, read once per network namespace (through any of its processes).
  std::map<uint64_t, Endpoint> listening;
  std::set<uint64_t> namespaces_read;
  auto read_namespace_of = [&](uint32_t pid) {
    const uint64_t ns = net_namespace_of(pid);
    if (ns == 0 || !namespaces_read.insert(ns).second) return;
    for (const char* table : {"/net/tcp", "/net/tcp6"})
      for (auto& [inode, at] : parse_listeners(slurp("/proc/" + std::to_string(pid) + table))) listening[inode] = at;
  };
  std::vector<Server> out;
  std::set<uint32_t> tree;
  for (uint32_t pid : traced) {
    uint32_t ppid = 0, sid = 0;
    if (!parent_and_session(pid, ppid, sid)) continue;
    tree.insert(pid);
    // Ancestors in the traced process's session: not the shell's sshd or init.
    for (int depth = 0; depth < 8 && ppid > 1; ++depth) {
      uint32_t pp = 0, psid = 0;
      if (!parent_and_session(ppid, pp, psid) || psid != sid) break;
      tree.insert(ppid);
      ppid = pp;
    }
  }
  // Any listener in the tree; elsewhere only listeners on a --http-port port.
  std::set<uint32_t> candidates = tree;
  if (!ports.empty())
    for (uint32_t pid : all_pids()) candidates.insert(pid);
  candidates.erase(self);
  for (uint32_t pid : candidates) {
    const std::vector<uint64_t> inodes = socket_inodes(pid);
    if (inodes.empty()) continue;
    read_namespace_of(pid);
    const uint64_t netns = net_namespace_of(pid);
    for (uint64_t inode : inodes) {
      auto it = listening.find(inode);
      if (it == listening.end()) continue;
      if (!tree.count(pid) && std::find(ports.begin(), ports.end(), it->second.port) == ports.end()) continue;
      out.push_back({pid, it->second.port, it->second, netns});
    }
  }
  return out;
}

}  // namespace causeway::collector
