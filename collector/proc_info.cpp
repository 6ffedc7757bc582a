#include "collector/proc_info.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

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
  const std::string cg = slurp(base + "/cgroup");
  p.container_id = container_id_from_cgroup(cg);
  // cgroup v2: the id BPF's bpf_get_current_cgroup_id returns is the inode of the folder.
  if (auto i = cg.find("0::"); i != std::string::npos) {
    std::string rel = cg.substr(i + 3, cg.find('\n', i) - i - 3);
    p.cgroup_path = rel;
    struct stat st {};
    if (::stat(("/sys/fs/cgroup" + rel).c_str(), &st) == 0) p.cgroup_id = st.st_ino;
  }
  p.launcher_rank = read_launcher_rank(pid);
  return p;
}

std::string container_id_from_cgroup(std::string_view text) {
  // docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>.scope, /docker/<id>, /kubepods/…/<id>
  static const std::regex id_re(R"((?:docker|cri-containerd|crio|containerd|libpod)[-/]([0-9a-f]{64}))");
  static const std::regex bare_re(R"(/([0-9a-f]{64})(?:\.scope)?(?:/|$))");
  static const std::regex pod_re(R"(pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}))");
  std::string s(text);
  std::smatch m;
  std::string id;
  if (std::regex_search(s, m, id_re)) id = m[1];
  else if (std::regex_search(s, m, bare_re)) id = m[1];
  if (id.empty()) return {};
  if (std::regex_search(s, m, pod_re)) {
    std::string pod = m[1];
    for (char& c : pod)
      if (c == '_') c = '-';
    return "pod" + pod + "/" + id.substr(0, 12);
  }
  return id.substr(0, 12);
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
