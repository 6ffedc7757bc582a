// A container-like cgroup for bpf tests, and a CPU hog that runs inside one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace causeway::test {

// A Kubernetes-like container cgroup below the cgroup2 mount, created empty and removed (with
// the parents it made, when no one else uses them) on destruction.
class PodCgroup {
 public:
  // Throws std::runtime_error when the folders cannot be made.
  explicit PodCgroup(const std::string& mount);
  PodCgroup(const PodCgroup&) = delete;
  PodCgroup& operator=(const PodCgroup&) = delete;
  ~PodCgroup();
  std::string dir() const { return mount_ + rel_; }
  const std::string& rel() const { return rel_; }
  const std::string& pod() const { return pod_; }
  const std::string& container() const { return container_; }
  uint64_t id() const { return id_; }

 private:
  std::vector<std::string> levels() const {
    return {"/kubepods", "/kubepods/burstable", "/kubepods/burstable/pod" + pod_, rel_};
  }
  std::string mount_, pod_, container_, rel_;
  uint64_t id_ = 0;
};

// An untraced process (a fork of the caller), named `name`, that joins `cgroup`, pins itself to
// `cpu`, sets its nice value and spins until it has had `cpu_ms` of CPU time there (not wall
// time: on a busy host it shares that CPU with more than the workload).
pid_t spawn_hog(const PodCgroup& cgroup, int cpu, int cpu_ms, const char* name, int nice = 0);

}  // namespace causeway::test
