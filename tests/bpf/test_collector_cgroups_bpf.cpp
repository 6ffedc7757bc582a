// Tenants under real eBPF: an untraced CPU hog in a container-like cgroup
// (<cgroup2 mount>/kubepods/burstable/pod<uid>/<64 hex>) shares the traced workload's CPU;
// the trace names the hog's thread with that cgroup's id, and `cgroups` maps the id to the
// path, the container id and the pod uid — also when the hog lived 50 ms and was reaped while
// the trace ran on. Skips (77) without a cgroup2 mount.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

#include "collector/cgroup_paths.h"
#include "tests/bpf/collector_harness.h"

namespace causeway::test {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

std::string random_hex(std::mt19937_64& rng, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(digits[rng() & 15]);
  return s;
}

const std::string& cgroup2_mount_or_skip() {
  const auto& mount = collector::cgroup2_mount();
  if (!mount) {
    std::printf("SKIPPED: no cgroup2 mount on this host (/proc/self/mountinfo)\n");
    std::exit(77);
  }
  return *mount;
}

// A Kubernetes-like container cgroup below the cgroup2 mount, created empty and removed (with
// the parents it made, when no one else uses them) on destruction.
class PodCgroup {
 public:
  explicit PodCgroup(const std::string& mount) : mount_(mount) {
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
  ~PodCgroup() {
    auto ls = levels();
    for (auto it = ls.rbegin(); it != ls.rend(); ++it) ::rmdir((mount_ + *it).c_str());  // EBUSY/ENOTEMPTY: in use
  }
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

// An untraced process (a fork of this test), named `name`, that joins `cgroup`, pins itself
// to `cpu` and spins until it has had `cpu_ms` of CPU time there (not wall time: on a busy
// host it shares that CPU with more than the workload).
pid_t spawn_hog(const PodCgroup& cgroup, int cpu, int cpu_ms, const char* name) {
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
  timespec start{}, now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1'000'000 < cpu_ms);
  ::_exit(0);
}

// The traced workload, CPU-bound on `cpu` (the fake runtime spins for its latency).
pid_t spawn_workload(const TempDir& dir, int cpu, int iterations) {
  return spawn({testprog("cw_workload"), "--pin-cpu", S(cpu), "--rate", "0", "--ops", "stream_sync", "--latency-us",
                "100", "--iterations", S(iterations)},
               dir.file("w.log"));
}

int last_cpu() { return static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) - 1; }

// Until the live DB holds a call of pid: from then on its context switches are recorded.
void wait_until_traced(const std::string& db, pid_t pid) {
  for (int waited = 0; waited < 20000; waited += 50) {
    if (file_exists(db) && q_int(db, "SELECT count(*) FROM events WHERE pid = " + S(pid)) > 0) return;
    sleep_ms(50);
  }
  throw std::runtime_error("pid " + S(pid) + " was not traced within 20 s");
}

struct HogRun {
  std::string db, log;
  pid_t workload = 0, hog = 0;
  bool hog_gone_before_workload = false;  // reaped (and gone from /proc) while the trace ran on
};

// One trace of the workload, CPU-bound on the last CPU, joined there by the hog in `cg` once
// the workload is traced.
HogRun run_with_hog(const TempDir& dir, const PodCgroup& cg, int hog_cpu_ms) {
  Tracer t(dir, {"--lib", testprog("libcudart.so.13"), "--no-stack"});
  const int cpu = last_cpu();
  HogRun r;
  r.workload = spawn_workload(dir, cpu, 8000);  // ≥ 0.8 s of CPU
  wait_until_traced(t.db(), r.workload);
  r.hog = spawn_hog(cg, cpu, hog_cpu_ms, "tenant_hog");
  REQUIRE(wait_exit(r.hog) == 0);
  r.hog_gone_before_workload = ::access(("/proc/" + S(r.hog)).c_str(), F_OK) != 0 &&
                               ::access(("/proc/" + S(r.workload)).c_str(), F_OK) == 0;
  REQUIRE(wait_exit(r.workload) == 0);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  r.db = t.db();
  r.log = t.log();
  return r;
}

// What the trace says about the hog: it ran in the workload's place, its threads row carries
// the container cgroup's id, and `cgroups` resolves that id to the path, container and pod.
void check_attributed(const std::string& db, pid_t workload, pid_t hog, const PodCgroup& cg) {
  const std::string H = S(hog), W = S(workload);
  // It ran in the workload's place (directly, or after another task the CPU ran in between).
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE (prev_pid = " + W + " AND next_pid = " + H + ") OR (prev_pid = " + H +
                      " AND next_pid = " + W + ")") > 0);
  CHECK(q_int(db, "SELECT cgroup_id FROM threads WHERE tid = " + H) == static_cast<int64_t>(cg.id()));
  CHECK(q_text(db, "SELECT comm FROM threads WHERE tid = " + H) == "tenant_hog");
  const std::string row = "SELECT %s FROM cgroups WHERE cgroup_id = " + S(static_cast<int64_t>(cg.id()));
  auto col = [&](const char* c) {
    std::string sql = row;
    sql.replace(sql.find("%s"), 2, c);
    return q_text(db, sql);
  };
  CHECK(col("path") == cg.rel());
  CHECK(col("container_id") == cg.container());
  CHECK(col("pod") == cg.pod());
  // The traced side is attributed too: the workload's threads and their cgroup's row.
  CHECK(q_int(db, "SELECT count(*) FROM threads t JOIN cgroups c ON c.session_id = t.session_id AND c.cgroup_id = "
                  "t.cgroup_id WHERE t.pid = " + S(workload)) > 0);
  CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'cgroups_unresolved'") == 0);
}

}  // namespace

TEST_CASE("a CPU hog in a kubepods cgroup sharing the traced workload's CPU: its thread carries the cgroup, resolved "
          "to path, container and pod") {
  PodCgroup cg(cgroup2_mount_or_skip());
  TempDir dir;
  HogRun r = run_with_hog(dir, cg, 300);
  INFO(r.log);
  check_attributed(r.db, r.workload, r.hog, cg);
}

TEST_CASE("a hog that lived 50 ms and was reaped while the trace ran on is still attributed (cgroup id from BPF)") {
  PodCgroup cg(cgroup2_mount_or_skip());
  TempDir dir;
  HogRun r = run_with_hog(dir, cg, 50);
  INFO(r.log);
  CHECK(r.hog_gone_before_workload);
  check_attributed(r.db, r.workload, r.hog, cg);
}

}  // namespace causeway::test
