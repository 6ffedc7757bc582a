#include "tests/bpf/pod_cgroup.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <stdexcept>

namespace causeway::test {
namespace {

std::string random_hex(std::mt19937_64& rng, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(digits[rng() & 15]);
  return s;
}

}  // namespace

PodCgroup::PodCgroup(const std::string& mount) : mount_(mount) {
  std::mt19937_64 rng(std::random_device{}());
  const std::string h = random_hex(rng, 32);
  pod_ = h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
  container_ = random_hex(rng, 64);
  rel_ = "/kubepods/burstable/pod" + pod_ + "/" + container_;
  for (const std::string& level : levels())
    if (::mkdir((mount_ + level).c_str(), 0755) != 0 && errno != EEXIST)
      throw std::runtime_error("mkdir " + mount_ + level + ": " + std::strerror(errno));
  struct stat st {};
  if (::stat(dir().c_str(), &st) != 0) throw std::runtime_error("stat " + dir());
  id_ = st.st_ino;
}
PodCgroup::~PodCgroup() {
  auto ls = levels();
  for (auto it = ls.rbegin(); it != ls.rend(); ++it) ::rmdir((mount_ + *it).c_str());  // EBUSY/ENOTEMPTY: in use
}

pid_t spawn_hog(const PodCgroup& cgroup, int cpu, int cpu_ms, const char* name, int nice) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_NAME, name);  // first: every record of it carries the name
  const std::string me = std::to_string(::getpid());
  int fd = ::open((cgroup.dir() + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::write(fd, me.data(), me.size()) != static_cast<ssize_t>(me.size())) ::_exit(3);
  ::close(fd);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof(set), &set) != 0) ::_exit(4);
  if (nice != 0 && ::setpriority(PRIO_PROCESS, 0, nice) != 0) ::_exit(5);
  timespec start{}, now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1'000'000 < cpu_ms);
  ::_exit(0);
}

}  // namespace causeway::test
