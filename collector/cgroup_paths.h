// Where a process sits in the cgroup hierarchies and which container that is: pure parsing of
// /proc/PID/cgroup, /proc/self/mountinfo and cgroup paths (docs/COLLECTOR.md "Tenants").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace causeway::collector {

// The lines of /proc/PID/cgroup: "0::/path" (v2) and "N:controllers:/path" (v1; controllers
// like "cpu,cpuacct" or "name=systemd"). A hybrid host has both.
struct CgroupMembership {
  std::optional<std::string> v2;                            // path in the v2 hierarchy
  std::vector<std::pair<std::string, std::string>> v1;      // (controllers, path) per v1 hierarchy
};
CgroupMembership parse_proc_cgroup(std::string_view text);

// The path that says where a process runs (processes.cgroup_path): the v2 path unless it is
// the root of a host that also has v1 hierarchies (a hybrid host, where container runtimes
// using cgroupfs place processes in v1 only); then the first v1 path other than "/" of the
// cpu, cpuset, name=systemd hierarchies, in that order; else the v2 path; "" when none.
std::string process_cgroup_path(const CgroupMembership& m);

// A container runtime's id and a Kubernetes pod's uid, found in a cgroup path.
struct ContainerIdentity {
  std::string container_id;  // full 64-hex id: docker, containerd, cri-o, podman; "" = none
  std::string pod;           // pod uid with dashes (the systemd driver writes underscores); "" = none
};
// The innermost container of the path (docker-in-docker: the inner one), e.g.
//   /system.slice/docker-<id>.scope, /docker/<id>, /kubepods/burstable/pod<uid>/<id>,
//   /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice/cri-containerd-<id>.scope,
//   …/crio-<id>.scope, /machine.slice/libpod-<id>.scope (and their -conmon- monitors).
ContainerIdentity container_of(std::string_view cgroup_path);

// The folder the cgroup2 hierarchy is mounted on, from the text of /proc/self/mountinfo:
// /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a hybrid one; nullopt when there
// is none (a v1-only host). A mount of the whole hierarchy is preferred to a bind mount of a
// part of it.
std::optional<std::string> find_cgroup2_mount(std::string_view mountinfo);
// The same for this host (read once).
const std::optional<std::string>& cgroup2_mount();

}  // namespace causeway::collector
