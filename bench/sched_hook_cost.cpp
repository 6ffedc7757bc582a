// sched_hook_cost: what `causeway trace` as shipped costs the host at each context switch, and
// what a traced job pays in switches, from BPF run-time statistics (docs/BENCHMARKS.md "The
// scheduler hooks' cost, round 10").
//
// cw_sched_switch runs at every context switch of the host, traced or not; cw_sched_wakeup at
// every wake-up; cw_sched_migrate at every move of a task to another CPU. A ping-pong makes a
// known number of switches: two threads of one child process pass a byte back and forth over
// two pipes --trips times (two switches a trip when both are pinned to one CPU). Per round and
// per --causeway binary, in this order:
//   no tracer           the ping-pong alone: its trips per second without any tracer
//   untraced            causeway running, the ping-pong's process not traced (what every
//                       process of the host pays)
//   traced              the ping-pong's process traced (--pid): every switch recorded, and each
//                       wake-up and switch begins or ends a wait of the CPU watch
//   traced unpinned     the same, the two threads free to run anywhere (migrations)
//   traced sleepers     three traced threads each sleeping 20 us --trips/3 times (a "trip" is
//                       one sleep here): hrtimer wake-ups
// For each phase: trips/s, then every causeway program that ran, with its runs per trip, ns a
// run and the recursion misses (runs the kernel skipped because a BPF program was already
// running on that CPU), from a BPF_ENABLE_STATS reference held by this process (never the
// host-wide sysctl). After each trace: switch-outs and switch-ins of the traced threads in the
// trace DB, and how often a thread left a CPU while already out (a switch-in the kernel's
// sched_switch stream lacks: docs/BENCHMARKS.md "The scheduler hooks' cost, round 10"). Last, per binary and phase, the medians over the rounds.
//
//   sudo build/bench/sched_hook_cost [--trips 100000] [--rounds 3] [--cpu N] [--causeway [NAME=]PATH]... [--keep DIR]
//
// Other processes' switches during a phase are counted too (on a busy host the untraced
// figure is the host's mix). Root (eBPF). Not part of the test run.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/bpf_prog_stats.h"
#include "common/unique_fd.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace fs = std::filesystem;
using namespace causeway;

namespace sched_hook_cost {

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "sched_hook_cost: %s\n", msg.c_str());
  std::exit(1);
}

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// --- the ping-pong ---------------------------------------------------------------------------

// Two threads passing one byte over two pipes `trips` times; the elapsed ns.
int64_t ping_pong(long trips, int cpu) {
  int ab[2], ba[2];
  if (pipe(ab) != 0 || pipe(ba) != 0) fail("pipe failed");
  pin_to(cpu);
  std::thread partner([&] {
    pin_to(cpu);
    char c = 0;
    for (long i = 0; i < trips; ++i)
      if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) return;
  });
  char c = 'x';
  const int64_t t0 = mono_ns();
  for (long i = 0; i < trips; ++i)
    if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) fail("ping-pong pipe broke");
  const int64_t elapsed = mono_ns() - t0;
  partner.join();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  return elapsed;
}

// Three threads each sleeping 20 us `sleeps` times (nanosleep, then ~2 us of work): hrtimer
// wake-ups, the workload whose threads the kernel's sched_switch stream shows leaving a CPU
// twice with no switch-in between (docs/BENCHMARKS.md); the elapsed ns.
std::atomic<long> sleepers_work;  // what their work writes (kept, not optimized away)

int64_t sleepers(long sleeps) {
  const int64_t t0 = mono_ns();
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k)
    threads.emplace_back([sleeps] {
      const timespec ts{0, 20000};
      for (long i = 0; i < sleeps; ++i) {
        nanosleep(&ts, nullptr);
        for (long j = 0; j < 2000; ++j) sleepers_work.store(j, std::memory_order_relaxed);
      }
    });
  for (auto& t : threads) t.join();
  return mono_ns() - t0;
}

// A child process that runs its workload once when told to (one byte on `go`) and writes the
// elapsed ns back: forked before the tracer starts, so its pid can be given to --pid.
class WorkloadChild {
 public:
  template <typename Work>
  explicit WorkloadChild(Work work) {
    int go[2], res[2];
    if (pipe(go) != 0 || pipe(res) != 0) fail("pipe failed");
    pid_ = fork();
    if (pid_ < 0) fail("fork failed");
    if (pid_ == 0) {
      ::close(go[1]);
      ::close(res[0]);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(0);
      const int64_t ns = work();
      _exit(write(res[1], &ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
    }
    ::close(go[0]);
    ::close(res[1]);
    go_ = UniqueFd(go[1]);
    result_ = UniqueFd(res[0]);
  }
  ~WorkloadChild() {
    go_ = UniqueFd();
    waitpid(pid_, nullptr, 0);
  }
  WorkloadChild(const WorkloadChild&) = delete;
  WorkloadChild& operator=(const WorkloadChild&) = delete;
  pid_t pid() const { return pid_; }
  int64_t run() {
    if (write(go_.get(), "g", 1) != 1) fail("cannot start the workload");
    int64_t ns = 0;
    if (read(result_.get(), &ns, sizeof(ns)) != sizeof(ns)) fail("the workload's child died");
    return ns;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd go_, result_;
};

// --- BPF run-time statistics -----------------------------------------------------------------

using HookStat = bench::BpfProgStat;
using HookStats = bench::BpfProgStats;

// --- the tracer ------------------------------------------------------------------------------

// `causeway trace` started and stopped (SIGINT, then reaped) by this process.
class Tracer {
 public:
  Tracer(const std::string& causeway, const std::string& db, const std::string& dir, const std::vector<pid_t>& pids) {
    const std::string ready = dir + "/ready", log = dir + "/causeway.log";
    std::vector<std::string> argv = {causeway, "trace", "--db", db, "--quiet", "--ready-file", ready};
    for (pid_t p : pids) {
      argv.push_back("--pid");
      argv.push_back(std::to_string(p));
    }
    fs::remove(ready);
    log_ = log;
    pid_ = fork();
    if (pid_ < 0) fail("fork failed");
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    for (int i = 0; !fs::exists(ready); ++i) {
      if (i == 600 || waitpid(pid_, nullptr, WNOHANG) != 0) fail("causeway trace did not start; its log: " + log);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~Tracer() {
    if (pid_ > 0) stop();
  }
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;
  pid_t pid() const { return pid_; }
  void stop() {
    ::kill(pid_, SIGINT);
    int status = 0;
    for (int tenths = 0; waitpid(pid_, &status, WNOHANG) == 0; ++tenths) {
      if (tenths == 600) ::kill(pid_, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    pid_ = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("causeway trace failed; its log: " + log_);
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

// --- phases and figures ----------------------------------------------------------------------

enum class Phase { no_tracer, untraced, traced, traced_unpinned, traced_sleepers, count_ };
constexpr const char* kPhaseNames[] = {"no tracer", "untraced", "traced", "traced unpinned", "traced sleepers"};

struct PhaseFig {
  double trips_per_s = 0;
  std::map<std::string, HookStat> hooks;  // by program name, summed over programs of that name
};

// Figures of one binary over the rounds: [phase][round].
using RoundsOf = std::vector<std::vector<PhaseFig>>;

PhaseFig phase_fig(long trips, int64_t elapsed_ns, const HookStats& before, const HookStats& after) {
  PhaseFig f;
  f.trips_per_s = double(trips) * 1e9 / double(elapsed_ns);
  for (const auto& [id, s] : after) {
    auto it = before.find(id);
    HookStat d{s.name, s.runs, s.ns, s.recursion_misses};
    if (it != before.end()) {
      d.runs -= it->second.runs;
      d.ns -= it->second.ns;
      d.recursion_misses -= it->second.recursion_misses;
    }
    if (d.runs == 0 && d.recursion_misses == 0) continue;
    HookStat& sum = f.hooks[s.name];
    sum.name = s.name;
    sum.runs += d.runs;
    sum.ns += d.ns;
    sum.recursion_misses += d.recursion_misses;
  }
  return f;
}

void print_phase(const std::string& who, Phase ph, long trips, const PhaseFig& f) {
  std::printf("  %-10s %-16s %9.0f trips/s (%.2f us a trip)\n", who.c_str(), kPhaseNames[int(ph)], f.trips_per_s,
              1e6 / f.trips_per_s);
  for (const auto& [name, s] : f.hooks)
    std::printf("      %-16s %9llu runs  %6.2f per trip  %7.1f ns/run  %llu recursion misses\n", name.c_str(),
                (unsigned long long)s.runs, double(s.runs) / double(trips), s.runs ? double(s.ns) / double(s.runs) : 0.0,
                (unsigned long long)s.recursion_misses);
}

int64_t count_of(sqlite3* db, const std::string& sql) {
  auto st = Statement::prepare(db, sql);
  if (!st) fail("query failed: " + st.error().message);
  return st->step() == SQLITE_ROW ? st->col_int(0) : -1;
}

// Switch-outs and switch-ins of each traced ping-pong's threads in the DB: a ping-pong's
// threads leave and enter a CPU equally often, so the difference is the records lost.
void print_switch_balance(const std::string& db, const std::vector<pid_t>& pids) {
  auto h = open_read_only(db);
  if (!h) fail("cannot open " + db + ": " + h.error().message);
  for (pid_t p : pids) {
    const std::string pid = std::to_string(p);
    const int64_t outs = count_of(h->get(), "SELECT count(*) FROM sched WHERE prev_pid = " + pid);
    const int64_t ins = count_of(h->get(), "SELECT count(*) FROM sched WHERE next_pid = " + pid + " AND prev_pid != " + pid);
    const int64_t both = count_of(h->get(), "SELECT count(*) FROM sched WHERE next_pid = " + pid + " AND prev_pid = " + pid);
    // A thread seen leaving a CPU while it was already out: a switch-in the stream lacks.
    const int64_t twice = count_of(
        h->get(), "WITH ev AS (SELECT ts_ns, prev_tid AS tid, 0 AS dir FROM sched WHERE prev_pid = " + pid +
                      " UNION ALL SELECT ts_ns, next_tid, 1 FROM sched WHERE next_pid = " + pid +
                      " AND next_tid != prev_tid), o AS (SELECT dir, lag(dir) OVER (PARTITION BY tid ORDER BY ts_ns) "
                      "AS before FROM ev) SELECT count(*) FROM o WHERE dir = 0 AND before = 0");
    std::printf("      pid %s in the DB: %lld switch-outs, %lld switch-ins from another process, %lld between its threads; "
                "%lld switch-outs while already out\n",
                pid.c_str(), (long long)outs, (long long)ins, (long long)both, (long long)twice);
  }
  std::printf("      dropped_ring_host %lld, switches_received %lld\n",
              (long long)count_of(h->get(), "SELECT coalesce(max(value), 0) FROM collector_stats WHERE name = 'dropped_ring_host'"),
              (long long)count_of(h->get(), "SELECT coalesce(max(value), 0) FROM collector_stats WHERE name = 'switches_received'"));
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Binary {
  std::string name, path;
};

// One round of one binary: the tracer started with the traced children's pids, the phases, stopped.
void run_round(const Binary& b, long trips, int cpu, const std::string& dir, std::vector<PhaseFig>& out) {
  auto pong = [trips](int on) { return [trips, on] { return ping_pong(trips, on); }; };
  {
    WorkloadChild alone(pong(cpu));
    out[int(Phase::no_tracer)] = phase_fig(trips, alone.run(), {}, {});
  }
  WorkloadChild untraced(pong(cpu)), traced(pong(cpu)), unpinned(pong(-1)), sleeping([trips] { return sleepers(trips / 3); });
  const std::string db = dir + "/trace-" + b.name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  Tracer tracer(b.path, db, dir, {traced.pid(), unpinned.pid(), sleeping.pid()});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its start-up scans settle
  const std::vector<uint32_t> ids = bench::bpf_programs_held_by(tracer.pid());
  for (auto [ph, child] : {std::pair{Phase::untraced, &untraced}, {Phase::traced, &traced}, {Phase::traced_unpinned, &unpinned},
                           {Phase::traced_sleepers, &sleeping}}) {
    const HookStats before = bench::bpf_prog_stats(ids);
    const int64_t ns = child->run();
    out[int(ph)] = phase_fig(trips, ns, before, bench::bpf_prog_stats(ids));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  tracer.stop();
  for (int ph = 0; ph < int(Phase::count_); ++ph) print_phase(b.name, Phase(ph), trips, out[ph]);
  print_switch_balance(db, {traced.pid(), unpinned.pid(), sleeping.pid()});
}

void print_medians(const Binary& b, const RoundsOf& rounds) {
  for (int ph = 0; ph < int(Phase::count_); ++ph) {
    std::vector<double> rate;
    std::map<std::string, std::vector<double>> ns_run, per_trip, misses;
    for (const PhaseFig& f : rounds[ph]) {
      rate.push_back(f.trips_per_s);
      for (const auto& [name, s] : f.hooks) {
        ns_run[name].push_back(s.runs ? double(s.ns) / double(s.runs) : 0);
        misses[name].push_back(double(s.recursion_misses));
      }
    }
    const double r = median_of(rate);
    std::printf("%-10s %-16s %9.0f trips/s  %.2f us a trip\n", b.name.c_str(), kPhaseNames[ph], r, 1e6 / r);
    for (const auto& [name, v] : ns_run)
      std::printf("    %-16s median %7.1f ns/run (range %.1f-%.1f), recursion misses median %.0f\n", name.c_str(),
                  median_of(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()),
                  median_of(misses[name]));
  }
}

}  // namespace sched_hook_cost

int main(int argc, char** argv) {
  using namespace sched_hook_cost;
  long trips = 100000;
  int rounds = 3;
  int cpu = int(std::thread::hardware_concurrency()) - 1;
  std::vector<Binary> binaries;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--trips") trips = std::stol(value());
    else if (a == "--rounds") rounds = std::stoi(value());
    else if (a == "--cpu") cpu = std::stoi(value());
    else if (a == "--keep") keep = value();
    else if (a == "--causeway") {
      const std::string v = value();
      const auto eq = v.find('=');
      binaries.push_back(eq == std::string::npos ? Binary{"causeway", v} : Binary{v.substr(0, eq), v.substr(eq + 1)});
    } else fail("unknown option " + a + " (usage: see the comment at the top of bench/sched_hook_cost.cpp)");
  }
  if (trips <= 0 || rounds <= 0) fail("--trips and --rounds must be positive");
  if (geteuid() != 0) fail("needs root (eBPF); run it with sudo");
  if (binaries.empty()) binaries.push_back({"causeway", (fs::path(argv[0]).parent_path().parent_path() / "causeway").string()});
  const std::string dir = keep.empty() ? (fs::temp_directory_path() / ("sched_hook_cost." + std::to_string(getpid()))).string() : keep;
  fs::create_directories(dir);

  const bench::BpfRunTimeStats stats;
  if (!stats.valid()) fail(std::string("cannot enable BPF run-time statistics (BPF_ENABLE_STATS): ") + std::strerror(errno));
  std::printf("%ld trips a phase (two switches a trip pinned), ping-pong on CPU %d, %d rounds\n", trips, cpu, rounds);
  std::vector<RoundsOf> figs(binaries.size(), RoundsOf(int(Phase::count_), std::vector<PhaseFig>()));
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < binaries.size(); ++k) {
      const size_t i = (k + size_t(r)) % binaries.size();  // the order rotates per round
      std::printf("round %d, %s:\n", r, binaries[i].name.c_str());
      std::vector<PhaseFig> one(int(Phase::count_));
      run_round(binaries[i], trips, cpu, dir, one);
      for (int ph = 0; ph < int(Phase::count_); ++ph) figs[i][ph].push_back(one[ph]);
      std::fflush(stdout);
    }
  std::printf("\nmedians over %d rounds:\n", rounds);
  for (size_t i = 0; i < binaries.size(); ++i) print_medians(binaries[i], figs[i]);
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
