#include "collector/cgroup_paths.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace causeway::collector {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t from = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(from, i - from));
      from = i + 1;
    }
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string unescape_mount_field(std::string_view f) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 3 < f.size() && f[i + 1] >= '0' && f[i + 1] <= '3' && f[i + 2] >= '0' &&
        f[i + 2] <= '7' && f[i + 3] >= '0' && f[i + 3] <= '7') {
      out.push_back(static_cast<char>((f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(f[i]);
    }
  }
  return out;
}

bool has_controller(std::string_view controllers, std::string_view wanted) {
  for (std::string_view c : split(controllers, ','))
    if (c == wanted) return true;
  return false;
}

}  // namespace

CgroupMembership parse_proc_cgroup(std::string_view text) {
  CgroupMembership m;
  for (std::string_view line : split(text, '\n')) {
    // hierarchy-id:controllers:path — the path may itself contain ':'.
    const size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (path.empty() || path.front() != '/') continue;
    if (id == "0" && controllers.empty()) m.v2 = std::string(path);
    else if (!controllers.empty()) m.v1.emplace_back(std::string(controllers), std::string(path));
  }
  return m;
}

std::string process_cgroup_path(const CgroupMembership& m) {
  if (m.v2 && (*m.v2 != "/" || m.v1.empty())) return *m.v2;
  for (std::string_view wanted : {"cpu", "cpuset", "name=systemd"})
    for (const auto& [controllers, path] : m.v1)
      if (path != "/" && has_controller(controllers, wanted)) return path;
  if (m.v2) return *m.v2;
  return m.v1.empty() ? std::string() : std::string("/");
}

ContainerIdentity container_of(std::string_view cgroup_path) {
  // A runtime's prefix (docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>.scope,
  // libpod-<id>.scope, /docker/<id>) or a bare /<id> folder (cgroupfs drivers), as a whole
  // path component.
  static const std::regex id_re(
      R"((?:/|(?:docker|cri-containerd|crio|containerd|libpod)(?:-conmon)?[-/])([0-9a-f]{64})(?:\.scope)?(?=/|$))");
  static const std::regex pod_re(R"(pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}))");
  const std::string s(cgroup_path);
  ContainerIdentity out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), id_re); it != std::sregex_iterator(); ++it)
    out.container_id = (*it)[1];  // the last match: the innermost container
  std::smatch m;
  if (std::regex_search(s, m, pod_re)) {
    out.pod = m[1];
    for (char& c : out.pod)
      if (c == '_') c = '-';
  }
  return out;
}

std::optional<std::string> find_cgroup2_mount(std::string_view mountinfo) {
  // id parent major:minor root mount-point options [optional…] - fstype source super-options
  std::optional<std::string> part;
  for (std::string_view line : split(mountinfo, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> tail = split(line.substr(dash + 3), ' ');
    if (tail.empty() || tail[0] != "cgroup2") continue;
    std::vector<std::string_view> head = split(line.substr(0, dash), ' ');
    if (head.size() < 5) continue;
    std::string dir = unescape_mount_field(head[4]);
    if (head[3] == "/") return dir;
    if (!part) part = std::move(dir);
  }
  return part;
}

const std::optional<std::string>& cgroup2_mount() {
  static const std::optional<std::string> mount = [] {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream ss;
    ss << in.rdbuf();
    return find_cgroup2_mount(ss.str());
  }();
  return mount;
}

}  // namespace causeway::collector
