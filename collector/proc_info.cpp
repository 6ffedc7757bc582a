#include "collector/proc_info.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
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
  std::string status = slurp(base + "/status");
  if (auto i = status.find("\nPPid:"); i != std::string::npos) p.ppid = static_cast<uint32_t>(std::stoul(status.substr(i + 6)));
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
