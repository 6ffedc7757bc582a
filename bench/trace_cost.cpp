// trace_cost: what `causeway trace` as shipped costs a traced call, side by side in one run.
//
// Four functions of the fake libcudart.so.13 with the same code, called from this process
// (--op launch, the default: cudaLaunchKernel and its twins cwfake_launch_twin_*; --op sync:
// cudaStreamSynchronize and cwfake_twin_*):
//   untraced      cwfake_launch_twin_bare     no probe
//   bare probes   cwfake_launch_twin_probed   an empty bpftrace uprobe + uretprobe
//   clock probes  cwfake_launch_twin_clocked  a bpftrace uprobe + uretprobe that each read the
//                                             clock (`$t = nsecs;`, bpf_ktime_get_ns) and nothing else
//   causeway      cudaLaunchKernel            the real `causeway trace` binary, started with
//                                             --lib <that library> plus each configuration's flags
// Both pairs are one bpftrace process. The empty pair is the probe trap itself; the clock pair is
// the least any tracer that times each call pays, so causeway's figure over it is what its
// programs cost beyond timing the call. A clock read's cost depends on the host's clocksource
// (~110 ns a read on a VM with kvm-clock and an unstable TSC, far less with the TSC):
// docs/BENCHMARKS.md "The counted path's cost, round 10".
// Configurations (default: the defaults, then --pid {pid}: the bench traced alone), each under
// every --causeway binary given (old and new builds compared in one run: --causeway old=PATH
// --causeway new=PATH). The run is --rounds alternated rounds; each round runs every
// configuration once, the order rotating per round: start causeway, warm up, measure the
// tracer's CPU (below), then N calls of each function, the four taking turns in batches of
// 2,000 calls (a uprobe's cost on a VM drifts over tenths of a second; interleaving gives each
// function the same drift), stop it and check its DB. The figure is the calling thread's CPU
// time per call (user + kernel: the probes run in the calling thread). Every round's figures
// are printed, then per configuration the median and range over the rounds of the time per
// call, the time added over each pair and the ratio to each (each round's own, against the pairs
// measured beside it), and the tracer's CPU. Every traced call must be in the trace DB or
// counted as dropped, and the number of calls that carried a user stack is printed. With --bpf-stats a further N calls run in each round with
// BPF run-time statistics on (BPF_ENABLE_STATS) and every BPF program the causeway and bpftrace processes hold
// is listed with its runs and run time per traced call (the counters add ~20–40 ns a run, so
// that pass is reported apart from the cost table).
//
// The tracer's own CPU (user + system of every causeway thread, /proc/PID/task/*/schedstat) is
// measured over a paced phase of --paced-rate calls/s (default 100,000) for --paced-seconds (3),
// as a share of one core, and over as long with no calls (what the tracer costs anyway: rescans,
// sched context, live diagnosis); the difference per call is its CPU per traced call. Every call made must be counted: the rollups (recorded rows plus calls
// counted in the kernel) of the traced op and this pid equal the calls made, or the difference
// is counted as dropped. Last, the figures as key=value lines (scripts/gpu-check.sh parses them):
// <config>_us, <config>_ratio, <config>_added_us (over the empty pair), <config>_ratio_over_clock,
// <config>_added_over_clock_us, <config>_tracer_cpu_pct (medians; _min and _max: their range),
// <config>_bare_pair_us, <config>_clock_pair_us, exact_counts, ...
//
//   sudo build/bench/trace_cost [--op launch|sync] [--links auto|session|multi|perf] [--calls 200000] [--rounds 5]
//                               [--config "FLAGS"]... [--bpf-stats] [--causeway [NAME=]PATH]... [--lib PATH]
//                               [--bpftrace PATH] [--keep DIR] [--paced-rate 100000] [--paced-seconds 3]
//
// --links picks how causeway attaches its uprobes (CAUSEWAY_UPROBE_LINKS for the traced
// child; auto: the kernel's best; docs/COLLECTOR.md "Uprobe links"). The bpftrace baseline is
// always bpftrace's own perf-event uprobe + uretprobe.
// A --config word {pid} stands for this process's pid (--config "--no-stack --pid {pid}");
// --pid with another pid (--config "--no-stack --pid 1") measures what a process the trace
// filters out pays (with session uprobes the entry alone); none of its calls may be recorded.
// Root (eBPF); needs bpftrace. Not part of the test run.
#include <bpf/bpf.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bpf_prog_stats.h"
#include "common/unique_fd.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace fs = std::filesystem;
using namespace causeway;

namespace {

using SyncFn = int (*)(void*);

// cudaLaunchKernel's signature; the bench calls every function through a SyncFn, so a launch
// goes through one of these (the same extra call for all four functions).
struct Dim3 {
  unsigned x, y, z;
};
using LaunchFn = int (*)(const void*, Dim3, Dim3, void**, size_t, void*);
LaunchFn g_launch_untraced, g_launch_probed, g_launch_clocked, g_launch_traced;
int kernel_stub;  // the "kernel" launched: any address
int launch_untraced(void*) { return g_launch_untraced(&kernel_stub, {4, 2, 1}, {128, 1, 1}, nullptr, 0, nullptr); }
int launch_probed(void*) { return g_launch_probed(&kernel_stub, {4, 2, 1}, {128, 1, 1}, nullptr, 0, nullptr); }
int launch_clocked(void*) { return g_launch_clocked(&kernel_stub, {4, 2, 1}, {128, 1, 1}, nullptr, 0, nullptr); }
int launch_traced(void*) { return g_launch_traced(&kernel_stub, {4, 2, 1}, {128, 1, 1}, nullptr, 0, nullptr); }

// What is measured: the traced function and its three twins in the fake libcudart.
struct OpUnderTest {
  std::string traced, twin_bare, twin_probed, twin_clocked;
};

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "trace_cost: %s\n", msg.c_str());
  std::exit(1);
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

double cpu_ns_per_call(SyncFn fn, long calls) {
  const int64_t c0 = thread_cpu_ns();
  for (long i = 0; i < calls; ++i) fn(reinterpret_cast<void*>(0x1000));
  return double(thread_cpu_ns() - c0) / double(calls);
}

// Thread CPU per call of the four functions, measured together: `calls` calls of each, in
// batches of kBatch calls taking turns (order rotated per batch). A uprobe's cost on a VM drifts
// by ±20% over tenths of a second (measured: consecutive 100k-call runs of one empty probe pair
// 1.68–2.8 µs); whole blocks of one function per measurement turned that drift into a ratio
// spread of 1.15–1.42×. Interleaved, every function sees the same drift.
struct Funcs {
  SyncFn untraced, probed, clocked, traced;
};
struct PerCallNs {
  double untraced = 0, probed = 0, clocked = 0, traced = 0;
};
constexpr long kBatch = 2000;

PerCallNs interleaved_cpu_ns_per_call(const Funcs& f, long calls) {
  constexpr int kFns = 4;
  const SyncFn fns[kFns] = {f.untraced, f.probed, f.clocked, f.traced};
  int64_t total[kFns] = {0, 0, 0, 0};
  for (long done = 0, b = 0; done < calls; done += kBatch, ++b) {
    const long n = std::min(kBatch, calls - done);
    for (int k = 0; k < kFns; ++k) {
      const int which = static_cast<int>((k + b) % kFns);
      const int64_t c0 = thread_cpu_ns();
      for (long i = 0; i < n; ++i) fns[which](reinterpret_cast<void*>(0x1000));
      total[which] += thread_cpu_ns() - c0;
    }
  }
  return {double(total[0]) / double(calls), double(total[1]) / double(calls), double(total[2]) / double(calls),
          double(total[3]) / double(calls)};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A child process (stdout + stderr to log), interrupted and reaped on destruction.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) : log_(log) {
    pid_ = fork();
    if (pid_ < 0) die("fork failed");
    if (pid_ == 0) {
      // A bench killed before its destructors run (timeout's SIGTERM) must not leave its bpftrace
      // or tracer attached: an orphaned bpftrace pair on the twin doubles the next run's bare
      // pair (its added figure then goes negative).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) stop();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string log() const { return read_file(log_); }
  // SIGINT, then waits; the exit code (-1 when killed by a signal). bpftrace 0.17 was seen to
  // stay in its event loop after a SIGINT (caught, nothing pending) until a second one, so
  // another goes after 30 s, and SIGKILL after 60 s.
  int stop() {
    ::kill(pid_, SIGINT);
    int status = 0;
    for (int tenths = 0; waitpid(pid_, &status, WNOHANG) == 0; ++tenths) {
      if (tenths == 300) ::kill(pid_, SIGINT);
      if (tenths == 600) ::kill(pid_, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

template <typename Pred>
void wait_until(Pred ready, const Child& c, const char* what) {
  for (int i = 0; i < 600; ++i) {
    if (ready()) return;
    if (!c.alive()) die(std::string(what) + " exited early:\n" + c.log());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  die(std::string(what) + " did not become ready in 30 s:\n" + c.log());
}

// One causeway binary with one configuration's flags: what each round runs, in turn with the others.
struct Setup {
  std::string label;     // "defaults", "--pid {pid}"; with several binaries "NAME defaults"
  std::string key;       // its figures' prefix: default, pid_pid, NAME_default
  std::string causeway;  // the binary
  std::string config;    // its flags
  bool filtered_out = false;  // --pid names another process
};

// One round of one setup: its causeway started, the four functions timed together, stopped.
struct RoundFig {
  double untraced = 0, probed = 0, clocked = 0, traced = 0;  // thread CPU ns a call
  int64_t made = 0, recorded = 0, with_stack = 0, dropped = 0;
  int64_t counted = 0;            // rollups of the op and this pid: recorded + counted in the kernel
  double tracer_cpu_share = -1;   // causeway's CPU over the paced phase / its wall time
  double tracer_idle_share = -1;  // the same over as long with no calls (rescans, sched context, diagnosis)
  bool exact = false;             // every call made recorded or counted (none of a filtered-out process)
  double ratio() const { return traced / probed; }
  double added_ns() const { return traced - probed; }
  double ratio_over_clock() const { return traced / clocked; }
  double added_over_clock_ns() const { return traced - clocked; }
  double probe_ratio() const { return (traced - untraced) / (probed - untraced); }
};

int64_t q_int(sqlite3* db, const std::string& sql) {
  auto st = Statement::prepare(db, sql);
  if (!st) die("query failed: " + st.error().message);
  return st->step() == SQLITE_ROW ? st->col_int(0) : -1;
}

void print_bpf_stats(const bench::BpfProgStats& a, const bench::BpfProgStats& b, long calls,
                     const char* who) {
  for (const auto& [id, s] : b) {
    auto it = a.find(id);
    const uint64_t runs = s.runs - (it == a.end() ? 0 : it->second.runs);
    const uint64_t ns = s.ns - (it == a.end() ? 0 : it->second.ns);
    if (runs == 0) continue;
    std::printf("  %-9s %-16s %10llu runs  %7.3f per call  %7.1f ns/run  %7.1f ns per traced call\n", who,
                s.name.c_str(), (unsigned long long)runs, double(runs) / double(calls), double(ns) / double(runs),
                double(ns) / double(calls));
  }
}

// CPU time of every thread of a process so far (ns): schedstat's first field, per thread.
int64_t process_cpu_ns(pid_t pid) {
  int64_t total = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& t : fs::directory_iterator(dir, ec)) {
    std::ifstream in(t.path() / "schedstat");
    int64_t ns = 0;
    if (in >> ns) total += ns;
  }
  return total;
}

// Calls at `rate` per second for `seconds`, paced per millisecond: the tracer's CPU share of one
// core meanwhile (what a launch-bound job making `rate` launches/s costs the host beyond its own thread).
double paced_tracer_share(SyncFn fn, pid_t tracer, long rate, int seconds, int64_t& made) {
  const long per_ms = std::max(1L, rate / 1000);
  const int64_t c0 = process_cpu_ns(tracer);
  const auto t0 = std::chrono::steady_clock::now();
  for (long ms = 0; ms < 1000L * seconds; ++ms) {
    for (long i = 0; i < per_ms; ++i) fn(reinterpret_cast<void*>(0x1000));
    made += per_ms;
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(ms + 1));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return double(process_cpu_ns(tracer) - c0) / 1e9 / wall;
}

RoundFig measure_round(const Setup& setup, int round, const OpUnderTest& op, const Funcs& f, long calls, bool bpf_stats,
                       const std::string& lib, const std::string& dir, pid_t bpftrace_pid, long paced_rate,
                       int paced_seconds, bool keep) {
  std::string stem = setup.key;
  const std::string db = dir + "/trace-" + stem + "-r" + std::to_string(round) + ".db",
                    ready = dir + "/ready-" + stem + "-r" + std::to_string(round);
  std::vector<std::string> argv = {setup.causeway, "trace", "--db", db, "--quiet", "--lib", lib, "--ready-file", ready};
  for (const auto& w : split_words(setup.config)) argv.push_back(w == "{pid}" ? std::to_string(getpid()) : w);
  Child cw(argv, dir + "/causeway-" + stem + "-r" + std::to_string(round) + ".log");
  wait_until([&] { return fs::exists(ready); }, cw, "causeway trace");

  RoundFig fig;
  // Warm-up: the first calls of the process and of the call site take the one-off paths.
  const long warm = 20000;
  for (long i = 0; i < warm; ++i) {
    f.traced(nullptr);
    f.probed(nullptr);
    f.clocked(nullptr);
    f.untraced(nullptr);
  }
  fig.made = warm;
  // The tracer's CPU first, before the flat-out calls leave it a backlog to write: idle, then paced.
  if (paced_seconds > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    int64_t none = 0;
    fig.tracer_idle_share = paced_tracer_share([](void*) { return 0; }, cw.pid(), paced_rate, paced_seconds, none);
    fig.tracer_cpu_share = paced_tracer_share(f.traced, cw.pid(), paced_rate, paced_seconds, fig.made);
  }
  const PerCallNs m = interleaved_cpu_ns_per_call(f, calls);
  fig.untraced = m.untraced;
  fig.probed = m.probed;
  fig.clocked = m.clocked;
  fig.traced = m.traced;
  fig.made += calls;
  if (std::min(fig.probed, fig.clocked) < fig.untraced + 100)
    die("the bpftrace probes do not seem to fire (empty pair " + std::to_string(fig.probed) + " ns, clock pair " +
        std::to_string(fig.clocked) + " ns, untraced " + std::to_string(fig.untraced) + " ns)");

  if (bpf_stats) {
    const auto cw_ids = bench::bpf_programs_held_by(cw.pid()), bt_ids = bench::bpf_programs_held_by(bpftrace_pid);
    const bench::BpfRunTimeStats on;
    if (!on.valid()) die(std::string("cannot enable BPF run-time statistics (BPF_ENABLE_STATS): ") + std::strerror(errno));
    auto a_cw = bench::bpf_prog_stats(cw_ids), a_bt = bench::bpf_prog_stats(bt_ids);
    cpu_ns_per_call(f.traced, calls);
    cpu_ns_per_call(f.probed, calls);
    cpu_ns_per_call(f.clocked, calls);
    auto b_cw = bench::bpf_prog_stats(cw_ids), b_bt = bench::bpf_prog_stats(bt_ids);
    fig.made += calls;
    std::printf("round %d, %s: BPF programs' run time (BPF_ENABLE_STATS), %ld calls of each function:\n", round,
                setup.label.c_str(), calls);
    print_bpf_stats(a_cw, b_cw, calls, "causeway");
    print_bpf_stats(a_bt, b_bt, calls, "bpftrace");
  }

  // Let the drain catch up before stopping: the count check below wants every call.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (int rc = cw.stop(); rc != 0) die("causeway trace exited " + std::to_string(rc) + ":\n" + cw.log());
  {
    auto h = open_read_only(db);
    if (!h) die("cannot open " + db + ": " + h.error().message);
    const std::string mine = " FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = '" + op.traced +
                             "' AND e.pid = " + std::to_string(getpid());
    fig.recorded = q_int(h->get(), "SELECT count(*)" + mine);
    fig.with_stack = q_int(h->get(), "SELECT count(*)" + mine + " AND e.stack_id IS NOT NULL");
    fig.dropped = q_int(h->get(), "SELECT coalesce(sum(value), 0) FROM collector_stats WHERE name = 'dropped_ring_calls'");
    fig.counted = q_int(h->get(), "SELECT coalesce(sum(r.count), 0) FROM rollups r JOIN ops o ON o.id = r.op_id WHERE o.name = '" +
                                      op.traced + "' AND r.pid = " + std::to_string(getpid()));
  }
  if (!keep)
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  // The drop counter is host-wide: calls of other processes traced meanwhile (discovery
  // probes every libcudart on the host) may add to it, never to the calls recorded here.
  fig.exact = setup.filtered_out ? fig.recorded == 0 && fig.counted == 0
                                 : fig.recorded <= fig.made && fig.counted <= fig.made && fig.made <= fig.counted + fig.dropped;
  return fig;
}

// A figure over the rounds: median, least and most.
struct Spread {
  double median = 0, min = 0, max = 0;
};
template <typename Get>
Spread spread_of(const std::vector<RoundFig>& rounds, Get get) {
  std::vector<double> v;
  for (const RoundFig& r : rounds) v.push_back(get(r));
  return {median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// The figures' key of a configuration: default, record_all, no_stack, pid_pid, ... from its flags.
std::string config_key(const std::string& tag) {
  if (tag == "defaults") return "default";
  std::string k;
  for (char ch : tag) {
    if (std::isalnum(static_cast<unsigned char>(ch))) k += ch;
    else if (!k.empty() && k.back() != '_') k += '_';
  }
  while (!k.empty() && k.back() == '_') k.pop_back();
  return k;
}

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  buf[n > 0 ? n : 0] = 0;
  return fs::path(buf).parent_path().string();
}

std::string find_bpftrace() {
  for (const char* p : {"/usr/bin/bpftrace", "/usr/sbin/bpftrace", "/usr/local/bin/bpftrace"})
    if (access(p, X_OK) == 0) return p;
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 200000;
  int rounds = 5;
  bool bpf_stats = false;
  std::vector<std::string> configs, causeways;
  const std::string here = self_dir();
  std::string lib = here + "/../testprogs/libcudart.so.13", bpftrace = find_bpftrace();
  std::string keep, op_name = "launch", links = "auto";
  long paced_rate = 100000;
  int paced_seconds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--calls") calls = std::atol(next().c_str());
    else if (a == "--rounds") rounds = std::atoi(next().c_str());
    else if (a == "--config") configs.push_back(next());
    else if (a == "--bpf-stats") bpf_stats = true;
    else if (a == "--causeway") causeways.push_back(next());
    else if (a == "--lib") lib = next();
    else if (a == "--bpftrace") bpftrace = next();
    else if (a == "--keep") keep = next();
    else if (a == "--op") op_name = next();
    else if (a == "--links") links = next();
    else if (a == "--paced-rate") paced_rate = std::atol(next().c_str());
    else if (a == "--paced-seconds") paced_seconds = std::atoi(next().c_str());
    else die("unknown argument " + a + " (see the header of bench/trace_cost.cpp)");
  }
  if (configs.empty()) configs = {"", "--pid {pid}"};
  if (causeways.empty()) causeways = {here + "/../causeway"};
  if (paced_rate < 1000 || paced_seconds < 0) die("--paced-rate ≥ 1000 and --paced-seconds ≥ 0");
  if (calls < 1000 || rounds < 1) die("--calls ≥ 1000 and --rounds ≥ 1");
  if (geteuid() != 0) die("needs root (eBPF)");
  if (bpftrace.empty()) die("bpftrace not found (apt-get install bpftrace) or pass --bpftrace PATH");
  lib = fs::absolute(lib).string();
  // Every configuration under every binary (old and new of one configuration side by side).
  std::vector<Setup> setups;
  for (const auto& c : configs)
    for (const auto& b : causeways) {
      Setup st;
      const size_t eq = b.find('=');
      const bool named = eq != std::string::npos && b.find('/') > eq;
      const std::string name = named ? b.substr(0, eq) : "";
      if (named && causeways.size() < 2) die("--causeway NAME=PATH names binaries to compare: give two or more");
      if (!named && causeways.size() > 1) die("with several --causeway, name each: --causeway NAME=PATH");
      st.causeway = fs::absolute(named ? b.substr(eq + 1) : b).string();
      if (access(st.causeway.c_str(), X_OK) != 0) die(st.causeway + " is not an executable");
      const std::string tag = c.empty() ? "defaults" : c;
      st.label = named ? name + " " + tag : tag;
      st.key = named ? config_key(name) + "_" + config_key(tag) : config_key(tag);
      st.config = c;
      const auto words = split_words(c);
      for (size_t i = 0; i + 1 < words.size(); ++i)
        if (words[i] == "--pid" && words[i + 1] != "{pid}" && words[i + 1] != std::to_string(getpid())) st.filtered_out = true;
      setups.push_back(st);
    }

  if (op_name != "launch" && op_name != "sync") die("--op is launch or sync");
  if (links != "auto" && links != "session" && links != "multi" && links != "perf")
    die("--links is auto, session, multi or perf");
  ::setenv("CAUSEWAY_UPROBE_LINKS", links.c_str(), 1);  // inherited by each causeway trace
  const bool launch = op_name == "launch";
  const OpUnderTest op = launch ? OpUnderTest{"cudaLaunchKernel", "cwfake_launch_twin_bare", "cwfake_launch_twin_probed",
                                             "cwfake_launch_twin_clocked"}
                                : OpUnderTest{"cudaStreamSynchronize", "cwfake_twin_bare", "cwfake_twin_probed",
                                              "cwfake_twin_clocked"};
  void* h = dlopen(lib.c_str(), RTLD_NOW);
  if (!h) die(std::string("dlopen: ") + dlerror());
  void* bare = dlsym(h, op.twin_bare.c_str());
  void* probed = dlsym(h, op.twin_probed.c_str());
  void* clocked = dlsym(h, op.twin_clocked.c_str());
  void* traced = dlsym(h, op.traced.c_str());
  if (!bare || !probed || !clocked || !traced)
    die(lib + " lacks " + op.traced + " or its twins (the fake libcudart of this build: ninja testprogs)");
  Funcs f{reinterpret_cast<SyncFn>(bare), reinterpret_cast<SyncFn>(probed), reinterpret_cast<SyncFn>(clocked),
          reinterpret_cast<SyncFn>(traced)};
  if (launch) {
    g_launch_untraced = reinterpret_cast<LaunchFn>(bare);
    g_launch_probed = reinterpret_cast<LaunchFn>(probed);
    g_launch_clocked = reinterpret_cast<LaunchFn>(clocked);
    g_launch_traced = reinterpret_cast<LaunchFn>(traced);
    f = Funcs{launch_untraced, launch_probed, launch_clocked, launch_traced};
  }

  std::string dir = keep;
  if (dir.empty()) {
    char tmpl[] = "/tmp/trace-cost-XXXXXX";
    if (!mkdtemp(tmpl)) die("mkdtemp failed");
    dir = tmpl;
  }
  fs::create_directories(dir);

  // One bpftrace process, both pairs: empty on the probed twin, a clock read in each program on the clocked one.
  auto pair = [&](const std::string& fn, const std::string& body) {
    return "uprobe:" + lib + ":" + fn + body + " uretprobe:" + lib + ":" + fn + body;
  };
  const std::string script = pair(op.twin_probed, " {}") + " " + pair(op.twin_clocked, " { $t = nsecs; }") +
                             " BEGIN { printf(\"probes attached\\n\"); }";
  Child bt({bpftrace, "-e", script}, dir + "/bpftrace.log");
  wait_until([&] { return bt.log().find("probes attached") != std::string::npos; }, bt, "bpftrace");

  utsname u{};
  uname(&u);
  double load[3] = {};
  getloadavg(load, 3);
  std::printf("trace_cost: %s, uprobe links %s, %d alternated rounds of %ld calls per function (median), thread CPU "
              "time per call; kernel %s, %u CPUs, load %.2f; bare pair: empty programs; clock pair: a clock read in each\n",
              op.traced.c_str(), links.c_str(), rounds, calls, u.release, std::thread::hardware_concurrency(), load[0]);
  std::fflush(stdout);
  // Each round runs every setup once, the order rotating per round, so a drift of the host over
  // the run falls on each alike; within a setup's turn the four functions take turns per batch.
  std::vector<std::vector<RoundFig>> figs(setups.size());
  for (int r = 1; r <= rounds; ++r)
    for (size_t j = 0; j < setups.size(); ++j) {
      const size_t i = (j + static_cast<size_t>(r - 1)) % setups.size();
      const RoundFig g = measure_round(setups[i], r, op, f, calls, bpf_stats, lib, dir, bt.pid(), paced_rate, paced_seconds,
                                       !keep.empty());
      figs[i].push_back(g);
      std::printf("round %d  %-22s untraced %.3f µs  bare pair %.3f µs  clock pair %.3f µs  causeway %.3f µs  "
                  "%.3f× %+.3f µs over the bare pair, %.3f× %+.3f µs over the clock pair", r, setups[i].label.c_str(),
                  g.untraced / 1000, g.probed / 1000, g.clocked / 1000, g.traced / 1000, g.ratio(), g.added_ns() / 1000,
                  g.ratio_over_clock(), g.added_over_clock_ns() / 1000);
      if (g.tracer_cpu_share >= 0)
        std::printf("  tracer %.2f%% of a core (no calls %.2f%%)", 100 * g.tracer_cpu_share, 100 * g.tracer_idle_share);
      std::printf("  %lld made, %lld in rollups, %lld rows, %lld dropped%s\n", (long long)g.made, (long long)g.counted,
                  (long long)g.recorded, (long long)g.dropped, g.exact ? "" : "  NOT EXACT");
      std::fflush(stdout);
    }
  bt.stop();

  // Medians over the rounds (scripts/gpu-check.sh's bench/bench_figures.py reads this table by
  // its column names): ratio and probe ratio are the medians of each round's own.
  std::printf("%-34s %10s %13s %13s %10s %8s %17s %17s %14s\n", "configuration", "untraced", "bare probes",
              "clock probes", "causeway", "ratio", "ratio over clock", "added over clock", "probe ratio");
  for (size_t i = 0; i < setups.size(); ++i) {
    const auto& v = figs[i];
    std::printf("%-34s %8.3f µs %11.3f µs %11.3f µs %8.3f µs %7.2f× %16.2f× %+14.3f µs %13.2f×\n",
                ("causeway trace " + setups[i].label).c_str(),
                spread_of(v, [](const RoundFig& g) { return g.untraced; }).median / 1000,
                spread_of(v, [](const RoundFig& g) { return g.probed; }).median / 1000,
                spread_of(v, [](const RoundFig& g) { return g.clocked; }).median / 1000,
                spread_of(v, [](const RoundFig& g) { return g.traced; }).median / 1000,
                spread_of(v, [](const RoundFig& g) { return g.ratio(); }).median,
                spread_of(v, [](const RoundFig& g) { return g.ratio_over_clock(); }).median,
                spread_of(v, [](const RoundFig& g) { return g.added_over_clock_ns(); }).median / 1000,
                spread_of(v, [](const RoundFig& g) { return g.probe_ratio(); }).median);
  }
  std::printf("(median of %d rounds; ratio: causeway / bare probes (the empty pair), whole call; ratio and added over "
              "clock: against the clock pair; probe ratio: causeway / bare probes above the untraced call)\n",
              rounds);
  std::printf("median (range) over %d rounds: causeway per call | bare pair | clock pair | added over the bare pair | "
              "ratio | added over the clock pair | ratio over clock | tracer CPU at %ld calls/s, %% of a core | tracer "
              "ns per call\n",
              rounds, paced_rate);
  for (size_t i = 0; i < setups.size(); ++i) {
    const auto& v = figs[i];
    const Spread t = spread_of(v, [](const RoundFig& g) { return g.traced / 1000; }),
                 bp = spread_of(v, [](const RoundFig& g) { return g.probed / 1000; }),
                 cp = spread_of(v, [](const RoundFig& g) { return g.clocked / 1000; }),
                 a = spread_of(v, [](const RoundFig& g) { return g.added_ns() / 1000; }),
                 q = spread_of(v, [](const RoundFig& g) { return g.ratio(); }),
                 ac = spread_of(v, [](const RoundFig& g) { return g.added_over_clock_ns() / 1000; }),
                 qc = spread_of(v, [](const RoundFig& g) { return g.ratio_over_clock(); });
    std::printf("  %-22s %.3f µs (%.3f–%.3f) | %.3f µs (%.3f–%.3f) | %.3f µs (%.3f–%.3f) | %+.3f µs (%+.3f to %+.3f) | "
                "%.3f× (%.3f–%.3f) | %+.3f µs (%+.3f to %+.3f) | %.3f× (%.3f–%.3f)",
                setups[i].label.c_str(), t.median, t.min, t.max, bp.median, bp.min, bp.max, cp.median, cp.min, cp.max,
                a.median, a.min, a.max, q.median, q.min, q.max, ac.median, ac.min, ac.max, qc.median, qc.min, qc.max);
    if (paced_seconds > 0) {
      const Spread c = spread_of(v, [](const RoundFig& g) { return 100 * g.tracer_cpu_share; }),
                   n = spread_of(v, [&](const RoundFig& g) {
                     return (g.tracer_cpu_share - g.tracer_idle_share) * 1e9 / double(paced_rate);
                   });
      std::printf(" | %.2f%% (%.2f–%.2f) | %.0f ns (%.0f to %.0f)", c.median, c.min, c.max, n.median, n.min, n.max);
    }
    std::printf("\n");
  }
  bool exact = true;
  for (size_t i = 0; i < setups.size(); ++i) {
    RoundFig sum;
    for (const RoundFig& g : figs[i]) {
      sum.made += g.made, sum.counted += g.counted, sum.recorded += g.recorded, sum.with_stack += g.with_stack;
      sum.dropped += g.dropped;
      exact = exact && g.exact;
    }
    std::printf("%s: %lld calls made, %lld in the rollups (%lld recorded as rows, the rest counted in the kernel), "
                "%lld with a user stack, %lld counted as dropped (ring full)\n",
                setups[i].label.c_str(), (long long)sum.made, (long long)sum.counted, (long long)sum.recorded,
                (long long)sum.with_stack, (long long)sum.dropped);
    if (paced_seconds > 0) {
      const Spread c = spread_of(figs[i], [](const RoundFig& g) { return g.tracer_cpu_share; }),
                   z = spread_of(figs[i], [](const RoundFig& g) { return g.tracer_idle_share; }),
                   n = spread_of(figs[i], [&](const RoundFig& g) {
                     return (g.tracer_cpu_share - g.tracer_idle_share) * 1e9 / double(paced_rate);
                   });
      std::printf("%s: tracer CPU at %ld calls/s: %.2f%% of one core (user + system, all its threads; median of %d "
                  "rounds); with no calls %.2f%%: %.0f ns of tracer CPU per call (median of the rounds' differences)\n",
                  setups[i].label.c_str(), paced_rate, 100 * c.median, rounds, 100 * z.median, n.median);
    }
  }
  // The figures, one key=value a line, for scripts (scripts/gpu-check.sh): per setup (default,
  // record_all, no_stack, pid_pid, ... from its flags; NAME_default with named binaries), medians
  // of the rounds and the range of the main ones.
  std::printf("figures: op=%s calls=%ld rounds=%d cpus=%u\npaced_rate=%ld\n", op.traced.c_str(), calls, rounds,
              std::thread::hardware_concurrency(), paced_rate);
  for (size_t i = 0; i < setups.size(); ++i) {
    const auto& v = figs[i];
    const char* k = setups[i].key.c_str();
    auto put = [&](const char* name, Spread sp, bool range) {
      std::printf("%s_%s=%.3f\n", k, name, sp.median);
      if (range) std::printf("%s_%s_min=%.3f\n%s_%s_max=%.3f\n", k, name, sp.min, k, name, sp.max);
    };
    put("untraced_us", spread_of(v, [](const RoundFig& g) { return g.untraced / 1000; }), false);
    put("bare_pair_us", spread_of(v, [](const RoundFig& g) { return g.probed / 1000; }), false);
    put("us", spread_of(v, [](const RoundFig& g) { return g.traced / 1000; }), true);
    put("ratio", spread_of(v, [](const RoundFig& g) { return g.ratio(); }), true);
    put("added_us", spread_of(v, [](const RoundFig& g) { return g.added_ns() / 1000; }), true);
    put("clock_pair_us", spread_of(v, [](const RoundFig& g) { return g.clocked / 1000; }), false);
    put("ratio_over_clock", spread_of(v, [](const RoundFig& g) { return g.ratio_over_clock(); }), true);
    put("added_over_clock_us", spread_of(v, [](const RoundFig& g) { return g.added_over_clock_ns() / 1000; }), true);
    RoundFig sum;
    for (const RoundFig& g : v) sum.made += g.made, sum.counted += g.counted, sum.recorded += g.recorded, sum.dropped += g.dropped;
    std::printf("%s_calls_made=%lld\n%s_calls_in_rollups=%lld\n%s_calls_recorded=%lld\n%s_dropped=%lld\n", k,
                (long long)sum.made, k, (long long)sum.counted, k, (long long)sum.recorded, k, (long long)sum.dropped);
    if (paced_seconds > 0) {
      put("tracer_cpu_pct", spread_of(v, [](const RoundFig& g) { return 100 * g.tracer_cpu_share; }), true);
      put("tracer_idle_cpu_pct", spread_of(v, [](const RoundFig& g) { return 100 * g.tracer_idle_share; }), false);
      put("tracer_ns_per_call",
          spread_of(v, [&](const RoundFig& g) { return (g.tracer_cpu_share - g.tracer_idle_share) * 1e9 / double(paced_rate); }),
          false);
    }
  }
  std::printf("exact_counts=%d\n", exact ? 1 : 0);
  if (keep.empty()) fs::remove_all(dir);
  // The calls run flat out (over 1M/s), past the rate the collector is sized for (0 drops at
  // 500k calls/s: bench/trace_rate.sh); a busy host may fill the ring then. What must hold
  // is the accounting: every call recorded or counted.
  if (!exact) die("calls lost without being counted as dropped, or recorded from a process filtered out");
  return 0;
}
