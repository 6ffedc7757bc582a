#include "collector/proc_info.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "collector/cgroup_paths.h"
#include "collector/launcher_env.h"

namespace causeway::collector {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim_nl(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

std::string read_comm(uint32_t pid, std::optional<uint32_t> tid) {
  std::string path = "/proc/" + std::to_string(pid);
  if (tid) path += "/task/" + std::to_string(*tid);
  return trim_nl(slurp(path + "/comm"));
}

ProcessRecord read_process(uint32_t pid) {
  ProcessRecord p;
  p.pid = pid;
  const std::string base = "/proc/" + std::to_string(pid);
  p.comm = read_comm(pid);
  std::string cmd = slurp(base + "/cmdline");
  for (char& c : cmd)
    if (c == '\0') c = ' ';
  p.cmdline = trim_nl(cmd);
  while (!p.cmdline.empty() && p.cmdline.back() == ' ') p.cmdline.pop_back();
  char buf[4096];
  ssize_t n = ::readlink((base + "/exe").c_str(), buf, sizeof(buf) - 1);
  if (n > 0) p.exe.assign(buf, static_cast<size_t>(n));
  if (auto ppid = read_ppid(pid)) p.ppid = *ppid;
  const CgroupMembership cg = parse_proc_cgroup(slurp(base + "/cgroup"));
  p.cgroup_path = process_cgroup_path(cg);
  p.container_id = container_of(p.cgroup_path).container_id;
  // The id BPF reports (bpf_get_current_cgroup_id) is the v2 one: the inode of the folder.
  if (cg.v2 && cgroup2_mount()) {
    struct stat st {};
    if (::stat((*cgroup2_mount() + *cg.v2).c_str(), &st) == 0) p.cgroup_id = st.st_ino;
  }
  p.launcher_rank = read_launcher_rank(pid);
  return p;
}

std::optional<uint32_t> read_ppid(uint32_t pid) {
  const std::string status = slurp("/proc/" + std::to_string(pid) + "/status");
  const auto i = status.find("\nPPid:");
  if (i == std::string::npos) return std::nullopt;
  return static_cast<uint32_t>(std::strtoul(status.c_str() + i + 6, nullptr, 10));
}

std::set<uint32_t> descendants_of(const std::set<uint32_t>& roots, const std::vector<uint32_t>& pids) {
  std::map<uint32_t, std::vector<uint32_t>> children;
  for (uint32_t pid : pids)
    if (auto ppid = read_ppid(pid); ppid && *ppid != pid) children[*ppid].push_back(pid);
  std::set<uint32_t> out;
  std::vector<uint32_t> todo(roots.begin(), roots.end());
  while (!todo.empty()) {
    const uint32_t p = todo.back();
    todo.pop_back();
    auto it = children.find(p);
    if (it == children.end()) continue;
    for (uint32_t c : it->second)
      if (!roots.count(c) && out.insert(c).second) todo.push_back(c);
  }
  return out;
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::string kernel_release() {
  struct utsname u {};
  ::uname(&u);
  return u.release;
}

}  // namespace causeway::collector
