#include "tests/bpf/collector_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::test {

// Every bpf test needs root, kernel BTF and BPF programs that load (the weak default in
// tests/support says "nothing needed"; this one makes the test exit 77 with the reason).
std::string missing_requirement() {
  if (::geteuid() != 0) return "bpf tests need root (CAP_BPF + CAP_PERFMON)";
  if (!file_exists("/sys/kernel/btf/vmlinux")) return "kernel BTF (/sys/kernel/btf/vmlinux) missing";
  auto r = run_causeway({"check", "--json", "--db", "/tmp/causeway-bpf-check.db"});
  bool loads = false;
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  if (doc.is_object() && doc.contains("checks") && doc["checks"].is_array())
    for (const auto& c : doc["checks"])
      if (c.value("name", "") == "bpf_load") loads = c.value("status", "") == "PASS";
  if (!loads) {
    // EPERM: root without CAP_BPF (a container), lockdown — this machine cannot run the tier.
    // Anything else as root with BTF (EACCES/EINVAL: the verifier rejected a program) is a
    // defect of ours: failing here keeps a broken program from turning the tier into skips.
    if (r.out.find("Operation not permitted") != std::string::npos) return "BPF programs may not be loaded here: " + r.out;
    std::fprintf(stderr, "FAILED: the BPF programs do not load as root on a kernel with BTF:\n%s\n", r.out.c_str());
    std::exit(1);
  }
  return "";
}

std::string testprog(const std::string& name) { return build_dir() + "/testprogs/" + name; }

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void wait_for_file(const std::string& path, int timeout_ms) {
  for (int waited = 0; !file_exists(path); waited += 20) {
    if (waited > timeout_ms) throw std::runtime_error("timed out waiting for " + path);
    sleep_ms(20);
  }
}

void touch(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  ::close(fd);
}

CallCounter::CallCounter(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  void* p = ::mmap(nullptr, sizeof(uint64_t), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw std::runtime_error("cannot map " + path);
  count_ = static_cast<const uint64_t*>(p);
}

CallCounter::~CallCounter() { ::munmap(const_cast<uint64_t*>(count_), sizeof(uint64_t)); }

uint64_t CallCounter::read() const { return __atomic_load_n(count_, __ATOMIC_RELAXED); }

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Child::~Child() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    wait_exit(pid_);
  }
}

int Child::wait() {
  reaped_ = true;
  return wait_exit(pid_);
}

Tracer::Tracer(const TempDir& dir, const std::vector<std::string>& args) : Tracer(dir, args, "trace", "") {}

Tracer::Tracer(const TempDir& dir, const std::vector<std::string>& args, const std::string& name,
               const std::string& uts_host)
    : db_(dir.file(name + ".db")), ready_(dir.file(name + ".ready")), log_(dir.file(name + ".log")) {
  std::vector<std::string> argv;
  if (!uts_host.empty()) argv = {"/usr/bin/unshare", "--uts", "/bin/sh", "-c", "hostname \"$0\" && exec \"$@\"", uts_host};
  for (const std::string& a : {causeway_bin(), std::string("trace"), std::string("--db"), db_, std::string("--quiet"),
                               std::string("--ready-file"), ready_})
    argv.push_back(a);
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = spawn(argv, log_);
  try {
    // Loading and verifying the BPF programs takes a few seconds, and the kernel serializes
    // uprobe (un)registration host-wide (an RCU grace period each), so every tracer attaching or
    // detaching meanwhile delays ours; on a loaded 2-core host (builds beside the tests) ready
    // has taken over 20 s.
    wait_for_file(ready_, 60000);
  } catch (...) {
    ::kill(pid_, SIGKILL);
    wait_exit(pid_);
    pid_ = -1;
    throw std::runtime_error("causeway trace did not get ready: " + read_file(log_));
  }
}

Tracer::~Tracer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait_exit(pid_);
  }
}

int Tracer::stop(int sig) {
  ::kill(pid_, sig);
  int rc = wait_exit(pid_);
  pid_ = -1;
  return rc;
}

std::string Tracer::log() const { return read_file(log_); }

std::vector<std::vector<int64_t>> q_rows(const std::string& db, const std::string& sql) {
  auto h = open_read_only(db);
  if (!h) throw std::runtime_error(h.error().message);
  auto st = Statement::prepare(h->get(), sql);
  if (!st) throw std::runtime_error(st.error().message + " in " + sql);
  std::vector<std::vector<int64_t>> rows;
  while (st->step() == SQLITE_ROW) {
    std::vector<int64_t> row;
    for (int i = 0; i < sqlite3_column_count(st->get()); ++i) row.push_back(st->col_int(i));
    rows.push_back(std::move(row));
  }
  return rows;
}

int64_t q_int(const std::string& db, const std::string& sql) {
  auto rows = q_rows(db, sql);
  return rows.empty() || rows[0].empty() ? -1 : rows[0][0];
}

std::string q_text(const std::string& db, const std::string& sql) {
  auto h = open_read_only(db);
  if (!h) throw std::runtime_error(h.error().message);
  auto st = Statement::prepare(h->get(), sql);
  if (!st) throw std::runtime_error(st.error().message);
  return st->step() == SQLITE_ROW ? st->col_text(0) : std::string();
}

}  // namespace causeway::test
