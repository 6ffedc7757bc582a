// Discovery by events (docs/COLLECTOR.md "Discovery and lifecycle"): the perf MMAP2 records
// that name a process mapping a library, a process's parent/session/start time from /proc,
// and the serving tree a listen is matched against.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collector/mmap_watch.h"
#include "collector/servers.h"

using namespace causeway::collector;

namespace {

// A PERF_RECORD_MMAP2 as the kernel writes it: the fixed part, then the name NUL-padded to 8.
std::vector<unsigned char> mmap2_record(uint32_t pid, const std::string& name, uint32_t type = PERF_RECORD_MMAP2) {
  const size_t fixed = 72, padded = (name.size() + 1 + 7) / 8 * 8;
  std::vector<unsigned char> r(fixed + padded, 0);
  perf_event_header h{type, 0, static_cast<uint16_t>(r.size())};
  std::memcpy(r.data(), &h, sizeof(h));
  std::memcpy(r.data() + 8, &pid, 4);
  std::memcpy(r.data() + 12, &pid, 4);
  std::memcpy(r.data() + fixed, name.data(), name.size());
  return r;
}

// A child that sleeps until killed; `new_session` puts it in a session of its own.
pid_t sleeping_child(bool new_session) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (new_session) ::setsid();
    for (;;) ::pause();
  }
  return pid;
}

void end_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

TEST_CASE("MMAP2 records give the process and the file it mapped") {
  auto r = mmap2_record(4242, "/opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12");
  auto m = decode_mmap2_record(r.data(), r.size());
  REQUIRE(m);
  CHECK(m->pid == 4242);
  CHECK(m->path == "/opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12");
  // Another record type, a record longer than the bytes given, a record with no name.
  auto comm = mmap2_record(1, "x", PERF_RECORD_COMM);
  CHECK_FALSE(decode_mmap2_record(comm.data(), comm.size()));
  CHECK_FALSE(decode_mmap2_record(r.data(), r.size() - 8));
  CHECK_FALSE(decode_mmap2_record(r.data(), 40));
  std::vector<unsigned char> bare(r.begin(), r.begin() + 72);
  const uint16_t size72 = 72;
  std::memcpy(bare.data() + 6, &size72, 2);
  CHECK_FALSE(decode_mmap2_record(bare.data(), bare.size()));
}

TEST_CASE("a process's parent, session and start time, with a comm that has spaces and parentheses") {
  REQUIRE(::prctl(PR_SET_NAME, "a) b (c", 0, 0, 0) == 0);
  const auto self = read_proc_link(static_cast<uint32_t>(::getpid()));
  REQUIRE(self);
  CHECK(self->ppid == static_cast<uint32_t>(::getppid()));
  CHECK(self->sid == static_cast<uint32_t>(::getsid(0)));
  CHECK(self->start_ticks > 0);
  const pid_t child = sleeping_child(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // setsid has run
  const auto c = read_proc_link(static_cast<uint32_t>(child));
  REQUIRE(c);
  CHECK(c->ppid == static_cast<uint32_t>(::getpid()));
  CHECK(c->sid == static_cast<uint32_t>(child));
  CHECK(c->start_ticks >= self->start_ticks);
  end_child(child);
  CHECK_FALSE(read_proc_link(static_cast<uint32_t>(child)));
}

TEST_CASE("the serving tree: traced processes, their session ancestors, and only what is new") {
  const auto self = static_cast<uint32_t>(::getpid());
  const pid_t same = sleeping_child(false), other = sleeping_child(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ServingTree tree;
  // A traced child in this session: it and this process (its parent, same session).
  const auto added = tree.add({static_cast<uint32_t>(same)});
  CHECK(added.count(static_cast<uint32_t>(same)));
  CHECK(added.count(self));
  CHECK(tree.holds(self));
  CHECK(tree.holds(static_cast<uint32_t>(same)));
  // A traced child in a session of its own: its parent (this process) is not its ancestor in
  // that session, and nothing already in the tree comes back as new.
  const auto more = tree.add({static_cast<uint32_t>(other), self});
  CHECK(more == std::set<uint32_t>{static_cast<uint32_t>(other)});
  // A process gone is no longer held, even before anyone erases it.
  end_child(same);
  CHECK(tree.has(static_cast<uint32_t>(same)));
  CHECK_FALSE(tree.holds(static_cast<uint32_t>(same)));
  tree.erase(static_cast<uint32_t>(other));
  CHECK_FALSE(tree.has(static_cast<uint32_t>(other)));
  end_child(other);
}

TEST_CASE("the mmap watch names this process when it maps a file executable") {
  auto w = MmapWatch::open();
  if (!w) {
    // System-wide perf events need CAP_PERFMON (or perf_event_paranoid <= 0): the bpf tests
    // run this path as root (test_collector_bpf's dlopen case).
    MESSAGE("skipped: " << w.error().message);
    return;
  }
  CHECK(w->cpus() > 0);
  char path[] = "/tmp/cw-mmap-watch-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 4096) == 0);
  void* data = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);  // not executable: not told
  void* code = ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  REQUIRE(data != MAP_FAILED);
  REQUIRE(code != MAP_FAILED);
  std::vector<ExecMapping> mine;
  for (int i = 0; i < 100 && mine.empty(); ++i) {
    for (auto& m : w->take([&](std::string_view p) { return p == path; })) mine.push_back(std::move(m));
    if (mine.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].pid == static_cast<uint32_t>(::getpid()));
  CHECK(w->seen() >= 1);
  ::munmap(code, 4096);
  ::munmap(data, 4096);
  ::close(fd);
  ::unlink(path);
}
