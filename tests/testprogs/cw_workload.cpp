// cw_workload: a CUDA/NCCL-shaped workload for causeway's bpf tests, benchmarks and planted
// incidents. It dlopen()s libcudart / libcuda / libnccl (the fake ones built next to it, or
// real ones via --cudart/--cuda/--nccl), so "library loaded after trace start" is natural.
//
//   cw_workload --threads 4 --iterations 1000 --latency-us 50 --ops memcpy,launch,stream_sync
//   cw_workload --nccl-ranks 4 --late-rank 2 --late-ms 20 --nccl-ops allreduce --iterations 50
//   cw_workload --nccl-ranks 2 --fork-wait-file F    (ranks forked, without exec, once F exists)
//   RANK=2 WORLD_SIZE=4 cw_workload --nccl-job J --nccl-ops allreduce   (one rank of job J per process)
//   cw_workload --pin-cpu 0 --hog-cpu 0 --hog-ms 3000 --ops stream_sync --iterations 2000
//   cw_workload --pin-cpu 0 --hog-cpu 0 --hog-delay-ms 100 --hog-ms 2000 --hog-nice -10 --rate 0 --ops stream_sync
//   cw_workload --fsync-every 10 --fsync-bytes 1m --io-dir /var/tmp --ops memcpy
//   cw_workload --memcpy-src-file /var/tmp/src --bytes 256k --ops launch,memcpy,stream_sync   (page faults in cudaMemcpy)
//   cw_workload --lock-holder-ms 5 --ops stream_sync      (a sibling thread holds the runtime lock)
//   cw_workload --lock-holder-ms 5 --lock-gap-ms 45 --ops stream_sync   (held 5 ms of every 50 ms)
//   cw_workload --slow-every 100 --slow-us 2000 --ops stream_sync,stream_sync_alt   (1 iteration in 100 slow)
//   cw_workload --graph-build-us 5000 --ops graph_recapture,stream_sync   (a CUDA graph re-captured every step)
//   cw_workload --graph-build-us 5000 --ops graph_replay,stream_sync      (captured once per thread, replayed)
//
//   cw_workload --abandon-calls 6 --wait-file F --ops stream_sync   (6 calls left by siglongjmp first)
//   cw_workload --count-file F --iterations 2000000000 --ops stream_sync   (calls made so far, live, in F)
//
// stream_sync_alt calls cudaStreamSynchronize from a second call site (stream + 0x100).
// --memcpy-src-file F [--memcpy-src-mb N]: memcpy copies from a read-only mapping of F (N MiB,
// default 64, written first), --bytes at a time, walking through it; each time the walk wraps,
// the mapping's pages and F's page cache are dropped. The fake cudaMemcpy reads its source, so
// the copies fault and wait for the disk inside the call (page-fault I/O, D state).
// --abandon-calls N: before the work (after --wait-file), N cudaStreamSynchronize calls that
// never return: each spins 10 s in the fake, and a SIGALRM 20 ms in jumps out of it
// (siglongjmp), the way longjmp or a C++ exception leaves a call without its return.
// graph_recapture: begin capture on the thread's stream, 3 kernel launches into it, end
// capture, cudaGraphInstantiate, launch the new exec, destroy it. graph_replay: the same
// capture (instantiated WithFlags) on a thread's first step only, then one launch of that exec
// per step. cu_graph_recapture / cu_graph_replay: the same through the driver API
// (cuGraphInstantiateWithFlags for both). graph_instantiate_fail: cudaGraphInstantiateWithFlags
// of a null graph, which fails without writing the exec (left at 0x5e5e).
// --graph-build-us: how long the fakes take to end a capture or instantiate a graph.
// At the end each process prints "calls pid=N OP=COUNT ..." (per --ops / --nccl-ops name).
// --count-file F: F holds one 64-bit count (host order) of the --ops calls returned so far, by
// every thread (of one process: not with --nccl-ranks), updated after each call through a
// shared mapping: a test reads it while the process runs (one that is killed never prints its
// counts) and bounds what a trace of a window must hold by the calls made in that window.
//
// The hog is a process named cw_hog, forked when the work starts (after --wait-file); it spins
// --hog-ms after --hog-delay-ms, at nice --hog-nice (below 0 it wins its CPU over the nice-0
// tasks there). The lock holder is a thread named cw_lock_holder. --nice N: the workload's own
// nice, set before anything else (its threads, ranks and hog inherit it; the hog then takes
// --hog-nice): a planted incident that must outweigh whatever else a busy host runs. Either
// nice, when not 0, also moves the process into a session (autogroup) of its own at that
// nice: see set_nice.
//
// Argument values are fixed so tests can check decoding: dst 0x7f0000001000, stream
// stream_base+thread, kind 1 (HtoD), grid (4,2,1), block (128,1,1), function 0xdead0000.
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/time.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  int threads = 1;
  long iterations = 100;
  double latency_us = 0;
  std::vector<std::string> ops{"malloc", "memcpy", "launch", "stream_sync", "free"};
  long abandon_calls = 0;
  std::string cudart, cuda, nccl;
  uint64_t bytes = 4096;
  uint64_t stream_base = 0x1000;
  int pin_cpu = -1;
  int hog_cpu = -1;
  long hog_ms = 0;
  int hog_nice = 0;
  int nice = 0;  // the workload's own nice (and its ranks'), set first: 0 leaves it as inherited
  long hog_delay_ms = 0;
  int nccl_ranks = 0;
  std::vector<std::string> nccl_ops;
  int late_rank = -1;
  double late_ms = 0;
  long fsync_every = 0;
  uint64_t fsync_bytes = 1 << 20;
  std::string io_dir = "/tmp";
  double lock_holder_ms = 0;
  double lock_gap_ms = -1;  // the holder's pause between holds; default lock_holder_ms / 4
  long slow_every = 0;  // every Nth iteration runs its CUDA ops at --slow-us latency
  double slow_us = 0;
  double graph_build_us = -1;  // the fakes' capture-end / instantiation time; < 0: their default
  long start_delay_ms = 0;
  long after_load_ms = 0;
  long linger_ms = 0;
  double rate = 0;  // calls per second per thread; 0 = as fast as possible
  std::string memcpy_src_file;  // memcpy reads a mapping of this file (page faults inside the call)
  long memcpy_src_mb = 64;
  std::string ready_file, wait_file;
  std::string count_file;  // calls made so far, live (a shared mapping of one uint64_t)
  std::string fork_wait_file;  // NCCL ranks: the parent forks them only once this file exists
  std::string nccl_job;        // this process is one rank of a job: RANK/WORLD_SIZE from the environment
  bool load_cuda = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

uint64_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  switch (end && *end ? *end : ' ') {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
  }
  return static_cast<uint64_t>(v);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "cw_workload: %s (see the header of cw_workload.cpp for flags)\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--threads") o.threads = std::stoi(val());
    else if (a == "--iterations") o.iterations = std::stol(val());
    else if (a == "--latency-us") o.latency_us = std::stod(val());
    else if (a == "--ops") o.ops = split(val());
    else if (a == "--cudart") o.cudart = val();
    else if (a == "--cuda") o.cuda = val();
    else if (a == "--nccl") o.nccl = val();
    else if (a == "--bytes") o.bytes = parse_bytes(val());
    else if (a == "--stream-base") o.stream_base = std::strtoull(val().c_str(), nullptr, 0);
    else if (a == "--pin-cpu") o.pin_cpu = std::stoi(val());
    else if (a == "--hog-cpu") o.hog_cpu = std::stoi(val());
    else if (a == "--hog-ms") o.hog_ms = std::stol(val());
    else if (a == "--hog-nice") o.hog_nice = std::stoi(val());
    else if (a == "--nice") o.nice = std::stoi(val());
    else if (a == "--hog-delay-ms") o.hog_delay_ms = std::stol(val());
    else if (a == "--nccl-ranks") o.nccl_ranks = std::stoi(val());
    else if (a == "--nccl-ops") o.nccl_ops = split(val());
    else if (a == "--late-rank") o.late_rank = std::stoi(val());
    else if (a == "--late-ms") o.late_ms = std::stod(val());
    else if (a == "--fsync-every") o.fsync_every = std::stol(val());
    else if (a == "--fsync-bytes") o.fsync_bytes = parse_bytes(val());
    else if (a == "--io-dir") o.io_dir = val();
    else if (a == "--lock-holder-ms") o.lock_holder_ms = std::stod(val());
    else if (a == "--lock-gap-ms") o.lock_gap_ms = std::stod(val());
    else if (a == "--slow-every") o.slow_every = std::stol(val());
    else if (a == "--slow-us") o.slow_us = std::stod(val());
    else if (a == "--graph-build-us") o.graph_build_us = std::stod(val());
    else if (a == "--start-delay-ms") o.start_delay_ms = std::stol(val());
    else if (a == "--after-load-ms") o.after_load_ms = std::stol(val());
    else if (a == "--linger-ms") o.linger_ms = std::stol(val());
    else if (a == "--rate") o.rate = std::stod(val());
    else if (a == "--memcpy-src-file") o.memcpy_src_file = val();
    else if (a == "--memcpy-src-mb") o.memcpy_src_mb = std::stol(val());
    else if (a == "--ready-file") o.ready_file = val();
    else if (a == "--count-file") o.count_file = val();
    else if (a == "--wait-file") o.wait_file = val();
    else if (a == "--fork-wait-file") o.fork_wait_file = val();
    else if (a == "--nccl-job") o.nccl_job = val();
    else if (a == "--abandon-calls") o.abandon_calls = std::stol(val());
    else if (a == "--help" || a == "-h") usage("help");
    else usage(("unknown flag " + a).c_str());
  }
  if (o.nccl_ranks > 0 && o.nccl_ops.empty()) o.nccl_ops = {"allreduce"};
  if (o.lock_gap_ms < 0) o.lock_gap_ms = o.lock_holder_ms / 4;
  for (const auto& op : o.ops)
    if (op.rfind("cu_", 0) == 0) o.load_cuda = true;
  return o;
}

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string p(buf);
  return p.substr(0, p.rfind('/'));
}

void* open_lib(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    std::fprintf(stderr, "cw_workload: dlopen %s: %s\n", path.c_str(), dlerror());
    std::exit(1);
  }
  return h;
}

template <typename F>
F sym(void* lib, const char* name) {
  void* p = lib ? dlsym(lib, name) : nullptr;
  if (!p) {
    std::fprintf(stderr, "cw_workload: missing symbol %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

void set_latency(void* lib, double us) {
  if (!lib) return;
  if (auto f = reinterpret_cast<void (*)(uint64_t)>(dlsym(lib, "cwfake_set_latency_ns")))
    f(static_cast<uint64_t>(us * 1000));
}

sigjmp_buf g_abandon_jump;

void abandon_on_alarm(int) { siglongjmp(g_abandon_jump, 1); }

// --abandon-calls: n calls of cudaStreamSynchronize left by siglongjmp from a signal handler.
void abandon_calls(void* rt, long n, double latency_us) {
  auto sync = sym<int (*)(void*)>(rt, "cudaStreamSynchronize");
  struct sigaction sa {};
  sa.sa_handler = abandon_on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  set_latency(rt, 10'000'000);
  for (volatile long i = 0; i < n; i = i + 1) {
    if (sigsetjmp(g_abandon_jump, 1) != 0) continue;
    itimerval t{};
    t.it_value.tv_usec = 20'000;
    setitimer(ITIMER_REAL, &t, nullptr);
    sync(reinterpret_cast<void*>(0x1000));
    std::fprintf(stderr, "cw_workload: the abandoned call returned\n");
    std::exit(1);
  }
  signal(SIGALRM, SIG_DFL);
  set_latency(rt, latency_us);
}

void set_graph_build(void* lib, double us) {
  if (!lib || us < 0) return;
  if (auto f = reinterpret_cast<void (*)(uint64_t)>(dlsym(lib, "cwfake_set_graph_build_ns")))
    f(static_cast<uint64_t>(us * 1000));
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void sleep_ms(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
}

void touch(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) ::close(fd);
}

// --count-file: one uint64_t in a shared mapping of the file, 0 to start; null without one.
uint64_t* map_count_file(const std::string& path) {
  if (path.empty()) return nullptr;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ::ftruncate(fd, sizeof(uint64_t)) != 0) usage(("--count-file: cannot create " + path).c_str());
  void* p = ::mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) usage(("--count-file: cannot map " + path).c_str());
  return static_cast<uint64_t*>(p);
}

struct Dim3 {
  unsigned x, y, z;
};
struct LaunchConfig {
  Dim3 grid, block;
  size_t smem;
  void* stream;
  void* attrs;
  unsigned nattrs;
};
struct CuLaunchConfig {
  unsigned gx, gy, gz, bx, by, bz, smem;
  void* stream;
  void* attrs;
  unsigned nattrs;
};
struct UniqueId {
  char internal[128];
};

using Op = std::function<int(int thread)>;

// CUDA graphs at one API level (runtime or driver): same calls and argument order, other names.
struct GraphApi {
  int (*begin_capture)(void* stream, int mode);
  int (*end_capture)(void* stream, void** graph);
  int (*instantiate)(void** exec, void* graph, unsigned long long flags);
  int (*launch)(void* exec, void* stream);
  int (*destroy)(void* exec);
  std::function<int(void*)> kernel;  // one kernel launch into a stream
};

constexpr int kCapturedKernels = 3;

// Captures kCapturedKernels launches on stream into a graph and instantiates it into *exec.
int capture_graph(const GraphApi& g, void* stream, void** exec) {
  void* graph = nullptr;
  int r = g.begin_capture(stream, 0);  // cudaStreamCaptureModeGlobal
  for (int k = 0; k < kCapturedKernels; ++k) r |= g.kernel(stream);
  r |= g.end_capture(stream, &graph);
  return r | g.instantiate(exec, graph, 0);
}

// <prefix>graph_recapture and <prefix>graph_replay (see the header). The API is looked up at
// each call, like every op's symbols, so a library without graphs serves the other ops.
template <typename Stream>
void add_graph_ops(std::map<std::string, Op>& m, const std::string& prefix, std::function<GraphApi()> recapture,
                   std::function<GraphApi()> replay, Stream stream, int threads) {
  m[prefix + "graph_recapture"] = [=](int t) {
    const GraphApi g = recapture();
    void* exec = nullptr;
    int r = capture_graph(g, stream(t), &exec);
    r |= g.launch(exec, stream(t));
    return r | g.destroy(exec);
  };
  auto execs = std::make_shared<std::vector<void*>>(threads, nullptr);  // one per thread, its own slot
  m[prefix + "graph_replay"] = [=](int t) {
    const GraphApi g = replay();
    void*& exec = (*execs)[t];
    int r = exec ? 0 : capture_graph(g, stream(t), &exec);
    return r | g.launch(exec, stream(t));
  };
}

// --memcpy-src-file: a read-only mapping of a file on disk, handed out --bytes at a time; when
// the walk wraps, the mapping's pages and the file's page cache are dropped, so the next
// reads fault and go to the disk.
class FaultingSource {
 public:
  FaultingSource(const std::string& path, size_t bytes, size_t chunk) : chunk_(chunk) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) usage(("--memcpy-src-file: cannot create " + path).c_str());
    std::vector<char> block(1 << 20, 'x');
    for (size_t done = 0; done < bytes; done += block.size())
      if (::write(fd, block.data(), block.size()) < 0) usage("--memcpy-src-file: write failed");
    ::fsync(fd);
    size_ = bytes - bytes % std::max<size_t>(chunk, 1);
    if (size_ == 0 || chunk == 0) usage("--memcpy-src-file: the file must hold at least one --bytes chunk");
    base_ = static_cast<char*>(::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0));
    if (base_ == MAP_FAILED) usage("--memcpy-src-file: mmap failed");
    fd_ = fd;
    drop();
  }
  const void* next() {
    if (off_ + chunk_ > size_) {
      off_ = 0;
      drop();
    }
    const void* p = base_ + off_;
    off_ += chunk_;
    return p;
  }

 private:
  void drop() {
    ::madvise(base_, size_, MADV_DONTNEED);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
  }
  char* base_ = nullptr;
  int fd_ = -1;
  size_t size_ = 0, chunk_ = 0, off_ = 0;
};

// The op table: name → one call with the documented fixed arguments.
std::map<std::string, Op> cuda_ops(void* rt, void* drv, const Options& o) {
  std::map<std::string, Op> m;
  void* const dst = reinterpret_cast<void*>(0x7f0000001000ull);
  static char host_buf[64];
  const size_t n = o.bytes;
  auto stream = [&o](int t) { return reinterpret_cast<void*>(o.stream_base ? o.stream_base + t : 0); };
  const void* fn = reinterpret_cast<const void*>(0xdead0000ull);
  if (rt) {
    auto malloc_ = sym<int (*)(void**, size_t)>(rt, "cudaMalloc");
    auto free_ = sym<int (*)(void*)>(rt, "cudaFree");
    auto memcpy_ = sym<int (*)(void*, const void*, size_t, int)>(rt, "cudaMemcpy");
    auto memcpy_async = sym<int (*)(void*, const void*, size_t, int, void*)>(rt, "cudaMemcpyAsync");
    auto launch = sym<int (*)(const void*, Dim3, Dim3, void**, size_t, void*)>(rt, "cudaLaunchKernel");
    auto ssync = sym<int (*)(void*)>(rt, "cudaStreamSynchronize");
    m["malloc"] = [=](int) { void* p = nullptr; return malloc_(&p, n); };
    m["malloc_fail"] = [=](int) { void* p = nullptr; return malloc_(&p, 1ull << 50); };
    m["malloc_managed"] = [=](int) {
      void* p = nullptr;
      return sym<int (*)(void**, size_t, unsigned)>(rt, "cudaMallocManaged")(&p, n, 1);
    };
    m["malloc_host"] = [=](int) { void* p = nullptr; return sym<int (*)(void**, size_t)>(rt, "cudaMallocHost")(&p, n); };
    m["free"] = [=](int) { return free_(dst); };
    if (!o.memcpy_src_file.empty()) {
      if (o.threads > 1) usage("--memcpy-src-file walks one mapping: one --threads only");
      auto src = std::make_shared<FaultingSource>(o.memcpy_src_file, static_cast<size_t>(o.memcpy_src_mb) << 20, n);
      if (auto touch = reinterpret_cast<void (*)(int)>(dlsym(rt, "cwfake_set_touch_src"))) touch(1);
      m["memcpy"] = [=](int) { return memcpy_(dst, src->next(), n, 1); };
    } else {
      m["memcpy"] = [=](int) { return memcpy_(dst, host_buf, n, 1); };
    }
    m["memcpy_async"] = [=](int t) { return memcpy_async(dst, host_buf, n, 1, stream(t)); };
    m["memcpy_async_ptsz"] = [=](int t) {
      return sym<int (*)(void*, const void*, size_t, int, void*)>(rt, "cudaMemcpyAsync_ptsz")(dst, host_buf, n, 1, stream(t));
    };
    m["memcpy_ptds"] = [=](int) { return sym<int (*)(void*, const void*, size_t, int)>(rt, "cudaMemcpy_ptds")(dst, host_buf, n, 1); };
    m["memcpy2d"] = [=](int) {
      return sym<int (*)(void*, size_t, const void*, size_t, size_t, size_t, int)>(rt, "cudaMemcpy2D")(dst, 256, host_buf, 256, 64, 16, 1);
    };
    m["memcpy2d_async"] = [=](int t) {
      return sym<int (*)(void*, size_t, const void*, size_t, size_t, size_t, int, void*)>(rt, "cudaMemcpy2DAsync")(
          dst, 256, host_buf, 256, 64, 16, 1, stream(t));
    };
    m["memcpy_peer"] = [=](int) { return sym<int (*)(void*, int, const void*, int, size_t)>(rt, "cudaMemcpyPeer")(dst, 1, host_buf, 0, n); };
    m["memcpy_peer_async"] = [=](int t) {
      return sym<int (*)(void*, int, const void*, int, size_t, void*)>(rt, "cudaMemcpyPeerAsync")(dst, 1, host_buf, 0, n, stream(t));
    };
    m["memset"] = [=](int) { return sym<int (*)(void*, int, size_t)>(rt, "cudaMemset")(dst, 0, n); };
    m["memset_async"] = [=](int t) { return sym<int (*)(void*, int, size_t, void*)>(rt, "cudaMemsetAsync")(dst, 0, n, stream(t)); };
    m["memset_async_ptsz"] = [=](int t) {
      return sym<int (*)(void*, int, size_t, void*)>(rt, "cudaMemsetAsync_ptsz")(dst, 0, n, stream(t));
    };
    m["launch"] = [=](int t) { return launch(fn, Dim3{4, 2, 1}, Dim3{128, 1, 1}, nullptr, 0, stream(t)); };
    m["launch_internal"] = [=](int t) {
      return sym<int (*)(const void*, Dim3, Dim3, void**, size_t, void*)>(rt, "__cudaLaunchKernel")(
          fn, Dim3{4, 2, 1}, Dim3{128, 1, 1}, nullptr, 0, stream(t));
    };
    m["launch_ptsz"] = [=](int t) {
      return sym<int (*)(const void*, Dim3, Dim3, void**, size_t, void*)>(rt, "cudaLaunchKernel_ptsz")(
          fn, Dim3{4, 2, 1}, Dim3{128, 1, 1}, nullptr, 0, stream(t));
    };
    m["launch_exc"] = [=](int t) {
      LaunchConfig c{{4, 2, 1}, {128, 1, 1}, 0, stream(t), nullptr, 0};
      return sym<int (*)(const LaunchConfig*, const void*, void**)>(rt, "cudaLaunchKernelExC")(&c, fn, nullptr);
    };
    m["graph_launch"] = [=](int t) { return sym<int (*)(void*, void*)>(rt, "cudaGraphLaunch")(dst, stream(t)); };
    m["graph_launch_ptsz"] = [=](int t) { return sym<int (*)(void*, void*)>(rt, "cudaGraphLaunch_ptsz")(dst, stream(t)); };
    using Instantiate = int (*)(void**, void*, unsigned long long);
    auto graphs = [=](const char* instantiate) {
      return [=] {
        return GraphApi{sym<int (*)(void*, int)>(rt, "cudaStreamBeginCapture"),
                        sym<int (*)(void*, void**)>(rt, "cudaStreamEndCapture"), sym<Instantiate>(rt, instantiate),
                        sym<int (*)(void*, void*)>(rt, "cudaGraphLaunch"), sym<int (*)(void*)>(rt, "cudaGraphExecDestroy"),
                        [=](void* st) { return launch(fn, Dim3{4, 2, 1}, Dim3{128, 1, 1}, nullptr, 0, st); }};
      };
    };
    add_graph_ops(m, "", graphs("cudaGraphInstantiate"), graphs("cudaGraphInstantiateWithFlags"), stream, o.threads);
    m["graph_instantiate_fail"] = [=](int) {
      void* exec = reinterpret_cast<void*>(0x5e5e);
      return sym<Instantiate>(rt, "cudaGraphInstantiateWithFlags")(&exec, nullptr, 0);
    };
    m["stream_sync"] = [=](int t) { return ssync(stream(t)); };
    m["stream_sync_alt"] = [=](int t) {
      int r = ssync(static_cast<char*>(stream(t)) + 0x100);
      __asm__ volatile("" ::: "memory");  // a real call from here, not a tail call: its own call site
      return r;
    };
    m["stream_sync_ptsz"] = [=](int t) { return sym<int (*)(void*)>(rt, "cudaStreamSynchronize_ptsz")(stream(t)); };
    m["device_sync"] = [=](int) { return sym<int (*)()>(rt, "cudaDeviceSynchronize")(); };
    m["event_sync"] = [=](int) { return sym<int (*)(void*)>(rt, "cudaEventSynchronize")(reinterpret_cast<void*>(0xe0e0)); };
  }
  if (drv) {
    const uint64_t d = 0x7e0000001000ull;
    m["cu_launch"] = [=](int t) {
      return sym<int (*)(const void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**)>(
          drv, "cuLaunchKernel")(fn, 4, 2, 1, 128, 1, 1, 0, stream(t), nullptr, nullptr);
    };
    m["cu_launch_ex"] = [=](int t) {
      CuLaunchConfig c{4, 2, 1, 128, 1, 1, 0, stream(t), nullptr, 0};
      return sym<int (*)(const CuLaunchConfig*, const void*, void**, void**)>(drv, "cuLaunchKernelEx")(&c, fn, nullptr, nullptr);
    };
    m["cu_alloc"] = [=](int) { uint64_t p = 0; return sym<int (*)(uint64_t*, size_t)>(drv, "cuMemAlloc_v2")(&p, n); };
    m["cu_alloc_managed"] = [=](int) {
      uint64_t p = 0;
      return sym<int (*)(uint64_t*, size_t, unsigned)>(drv, "cuMemAllocManaged")(&p, n, 1);
    };
    m["cu_free"] = [=](int) { return sym<int (*)(uint64_t)>(drv, "cuMemFree_v2")(d); };
    m["cu_memcpy"] = [=](int) { return sym<int (*)(uint64_t, uint64_t, size_t)>(drv, "cuMemcpy")(d, d + 4096, n); };
    m["cu_memcpy_async"] = [=](int t) {
      return sym<int (*)(uint64_t, uint64_t, size_t, void*)>(drv, "cuMemcpyAsync")(d, d + 4096, n, stream(t));
    };
    m["cu_htod"] = [=](int) { return sym<int (*)(uint64_t, const void*, size_t)>(drv, "cuMemcpyHtoD_v2")(d, host_buf, n); };
    m["cu_htod_async"] = [=](int t) {
      return sym<int (*)(uint64_t, const void*, size_t, void*)>(drv, "cuMemcpyHtoDAsync_v2")(d, host_buf, n, stream(t));
    };
    m["cu_dtoh"] = [=](int) { return sym<int (*)(void*, uint64_t, size_t)>(drv, "cuMemcpyDtoH_v2")(host_buf, d, n); };
    m["cu_dtoh_async"] = [=](int t) {
      return sym<int (*)(void*, uint64_t, size_t, void*)>(drv, "cuMemcpyDtoHAsync_v2")(host_buf, d, n, stream(t));
    };
    m["cu_dtod"] = [=](int) { return sym<int (*)(uint64_t, uint64_t, size_t)>(drv, "cuMemcpyDtoD_v2")(d, d + 4096, n); };
    m["cu_dtod_async"] = [=](int t) {
      return sym<int (*)(uint64_t, uint64_t, size_t, void*)>(drv, "cuMemcpyDtoDAsync_v2")(d, d + 4096, n, stream(t));
    };
    m["cu_ctx_sync"] = [=](int) { return sym<int (*)()>(drv, "cuCtxSynchronize")(); };
    m["cu_stream_sync"] = [=](int t) { return sym<int (*)(void*)>(drv, "cuStreamSynchronize")(stream(t)); };
    m["cu_graph_launch"] = [=](int t) { return sym<int (*)(void*, void*)>(drv, "cuGraphLaunch")(reinterpret_cast<void*>(d), stream(t)); };
    auto cu_launch = sym<int (*)(const void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                                 void**, void**)>(drv, "cuLaunchKernel");
    auto graphs = [=] {
      return GraphApi{sym<int (*)(void*, int)>(drv, "cuStreamBeginCapture_v2"),
                      sym<int (*)(void*, void**)>(drv, "cuStreamEndCapture"),
                      sym<int (*)(void**, void*, unsigned long long)>(drv, "cuGraphInstantiateWithFlags"),
                      sym<int (*)(void*, void*)>(drv, "cuGraphLaunch"), sym<int (*)(void*)>(drv, "cuGraphExecDestroy"),
                      [=](void* st) { return cu_launch(fn, 4, 2, 1, 128, 1, 1, 0, st, nullptr, nullptr); }};
    };
    add_graph_ops(m, "cu_", graphs, graphs, stream, o.threads);
  }
  return m;
}

std::map<std::string, Op> nccl_ops(void* lib, void* comm, const Options& o) {
  std::map<std::string, Op> m;
  if (!lib) return m;
  static char buf[64];
  const size_t count = o.bytes / 4;
  auto stream = [&o](int t) { return reinterpret_cast<void*>(o.stream_base ? o.stream_base + t : 0); };
  // datatype 7 = ncclFloat32, redop 0 = ncclSum
  m["allreduce"] = [=](int t) {
    return sym<int (*)(const void*, void*, size_t, int, int, void*, void*)>(lib, "ncclAllReduce")(buf, buf, count, 7, 0, comm, stream(t));
  };
  m["allgather"] = [=](int t) {
    return sym<int (*)(const void*, void*, size_t, int, void*, void*)>(lib, "ncclAllGather")(buf, buf, count, 7, comm, stream(t));
  };
  m["reducescatter"] = [=](int t) {
    return sym<int (*)(const void*, void*, size_t, int, int, void*, void*)>(lib, "ncclReduceScatter")(buf, buf, count, 7, 0, comm,
                                                                                                    stream(t));
  };
  m["broadcast"] = [=](int t) {
    return sym<int (*)(const void*, void*, size_t, int, int, void*, void*)>(lib, "ncclBroadcast")(buf, buf, count, 7, 0, comm, stream(t));
  };
  m["bcast"] = [=](int t) { return sym<int (*)(void*, size_t, int, int, void*, void*)>(lib, "ncclBcast")(buf, count, 7, 0, comm, stream(t)); };
  m["reduce"] = [=](int t) {
    return sym<int (*)(const void*, void*, size_t, int, int, int, void*, void*)>(lib, "ncclReduce")(buf, buf, count, 7, 0, 0, comm,
                                                                                                  stream(t));
  };
  m["sendrecv"] = [=](int t) {
    auto gs = sym<int (*)()>(lib, "ncclGroupStart");
    auto ge = sym<int (*)()>(lib, "ncclGroupEnd");
    gs();
    int r = sym<int (*)(const void*, size_t, int, int, void*, void*)>(lib, "ncclSend")(buf, count, 7, 1, comm, stream(t));
    r |= sym<int (*)(void*, size_t, int, int, void*, void*)>(lib, "ncclRecv")(buf, count, 7, 1, comm, stream(t));
    return r | ge();
  };
  return m;
}

// The calling process at this nice, in a session of its own whose autogroup gets it too. With
// sched autogroup (most desktop and many server kernels; /proc/sys/kernel/sched_autogroup_enabled),
// nice only ranks tasks inside one session: a compiler in another login's session got as much of
// the pinned CPU as this whole test's session, so a nice -10 hog took less of the workload's
// time than a passing cc1plus. A session of its own at that nice (root) outranks those.
void set_nice(const char* who, int nice) {
  if (nice == 0) return;
  ::setsid();  // fails only for a group leader, which keeps its session
  if (FILE* f = std::fopen("/proc/self/autogroup", "w")) {
    std::fprintf(f, "%d", nice);
    std::fclose(f);
  }
  if (setpriority(PRIO_PROCESS, 0, nice) != 0) std::perror(who);
}

pid_t run_hog(int cpu, long ms, int nice, long delay_ms) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_NAME, "cw_hog");
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  pin_to(cpu);
  set_nice("cw_hog: setpriority", nice);
  sleep_ms(delay_ms);
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 100000; ++i) x = x + i;
  _exit(0);
}

void fsync_write(const Options& o, int thread) {
  std::string path = o.io_dir + "/cw_workload." + std::to_string(getpid()) + "." + std::to_string(thread);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  std::vector<char> data(o.fsync_bytes, 'x');
  if (::write(fd, data.data(), data.size()) < 0) std::perror("write");
  ::fsync(fd);
  ::close(fd);
  ::unlink(path.c_str());
}

// One process's work: thread loops over the CUDA ops then the NCCL ops, iterations times.
int run_rank(const Options& o, void* rt, void* drv, void* nccl, int rank, const UniqueId* id) {
  void* comm = nullptr;
  if (nccl && !o.nccl_ops.empty()) {
    int nranks = o.nccl_ranks > 0 ? o.nccl_ranks : 1;
    UniqueId local{};
    if (!id) {
      sym<int (*)(UniqueId*)>(nccl, "ncclGetUniqueId")(&local);
      id = &local;
    }
    int r = sym<int (*)(void**, int, UniqueId, int)>(nccl, "ncclCommInitRank")(&comm, nranks, *id, rank);
    if (r != 0) std::fprintf(stderr, "cw_workload: ncclCommInitRank failed: %d\n", r);
  }
  auto cops = cuda_ops(rt, drv, o);
  auto nops = nccl_ops(nccl, comm, o);
  std::vector<std::pair<std::string, Op>> plan;
  for (const auto& name : o.ops) {
    auto it = cops.find(name);
    if (it == cops.end()) usage(("unknown op " + name).c_str());
    plan.emplace_back(name, it->second);
  }
  std::vector<std::pair<std::string, Op>> nplan;
  for (const auto& name : o.nccl_ops) {
    auto it = nops.find(name);
    if (it == nops.end()) usage(("unknown nccl op " + name).c_str());
    nplan.emplace_back(name, it->second);
  }

  uint64_t* const calls_so_far = map_count_file(o.count_file);
  if (!o.ready_file.empty()) touch(o.ready_file + (o.nccl_ranks > 0 ? "." + std::to_string(rank) : ""));
  if (!o.wait_file.empty())
    while (access(o.wait_file.c_str(), F_OK) != 0) sleep_ms(10);
  if (o.abandon_calls > 0) {
    if (!rt) usage("--abandon-calls needs libcudart (an --ops name of the runtime)");
    abandon_calls(rt, o.abandon_calls, o.latency_us);
  }
  // The hog starts with the work (after --wait-file), from rank 0's process.
  pid_t hog = -1;
  if (rank == 0 && o.hog_cpu >= 0 && o.hog_ms > 0) hog = run_hog(o.hog_cpu, o.hog_ms, o.hog_nice, o.hog_delay_ms);

  std::atomic<bool> done{false};
  std::thread holder;
  if (o.lock_holder_ms > 0 && rt) {
    auto serialize = reinterpret_cast<void (*)(int)>(dlsym(rt, "cwfake_set_serialize"));
    auto hold = reinterpret_cast<void (*)(uint64_t)>(dlsym(rt, "cwfake_hold_lock_ns"));
    if (serialize && hold) {
      serialize(1);
      holder = std::thread([&] {
        pthread_setname_np(pthread_self(), "cw_lock_holder");
        while (!done) {
          hold(static_cast<uint64_t>(o.lock_holder_ms * 1e6));
          sleep_ms(o.lock_gap_ms);
        }
      });
    }
  }

  std::atomic<long> errors{0};
  // Calls made per op (the --ops and --nccl-ops names), printed at the end: a test adds what
  // the trace stored and what it counted as lost and compares.
  std::vector<std::atomic<long>> made(plan.size() + nplan.size());
  auto worker = [&](int t) {
    std::vector<long> mine(made.size(), 0);
    if (o.pin_cpu >= 0) pin_to(o.pin_cpu);
    auto next = std::chrono::steady_clock::now();
    const auto period = o.rate > 0 ? std::chrono::nanoseconds(static_cast<int64_t>(1e9 / o.rate)) : std::chrono::nanoseconds(0);
    for (long i = 0; i < o.iterations; ++i) {
      const bool slow = o.slow_every > 0 && (i + 1) % o.slow_every == 0;
      if (slow) set_latency(rt, o.slow_us);
      for (size_t k = 0; k < plan.size(); ++k) {
        if (plan[k].second(t) != 0) ++errors;
        ++mine[k];
        if (calls_so_far) __atomic_fetch_add(calls_so_far, 1, __ATOMIC_RELAXED);
        if (o.rate > 0) {
          // Sleep only once a millisecond ahead: at hundreds of thousands of calls/s a sleep
          // per call would cost more than the call (and oversleep by the timer slack).
          next += period;
          if (next - std::chrono::steady_clock::now() > std::chrono::milliseconds(1)) std::this_thread::sleep_until(next);
        }
      }
      if (slow) set_latency(rt, o.latency_us);
      for (size_t k = 0; k < nplan.size(); ++k) {
        if (rank == o.late_rank) sleep_ms(o.late_ms);
        if (nplan[k].second(t) != 0) ++errors;
        ++mine[plan.size() + k];
      }
      if (o.fsync_every > 0 && (i + 1) % o.fsync_every == 0) fsync_write(o, t);
    }
    for (size_t k = 0; k < made.size(); ++k) made[k] += mine[k];
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < o.threads; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (auto& th : threads) th.join();
  done = true;
  if (holder.joinable()) holder.join();
  if (comm) sym<int (*)(void*)>(nccl, "ncclCommDestroy")(comm);
  if (hog > 0) waitpid(hog, nullptr, 0);  // it ends after --hog-delay-ms + --hog-ms
  std::string calls;
  for (size_t k = 0; k < made.size(); ++k)
    calls += " " + (k < plan.size() ? plan[k].first : nplan[k - plan.size()].first) + "=" + std::to_string(made[k].load());
  std::printf("calls pid=%d%s\n", getpid(), calls.c_str());
  std::printf("pid=%d rank=%d threads=%d iterations=%ld errors=%ld\n", getpid(), rank, o.threads, o.iterations,
              errors.load());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  set_nice("cw_workload: setpriority", o.nice);
  sleep_ms(o.start_delay_ms);
  const std::string dir = self_dir();
  bool need_rt = false;
  for (const auto& op : o.ops)
    if (op.rfind("cu_", 0) != 0) need_rt = true;
  void* rt = need_rt ? open_lib(o.cudart.empty() ? dir + "/libcudart.so.13" : o.cudart) : nullptr;
  void* drv = o.load_cuda ? open_lib(o.cuda.empty() ? dir + "/libcuda.so.1" : o.cuda) : nullptr;
  void* nccl = !o.nccl_ops.empty() ? open_lib(o.nccl.empty() ? dir + "/libnccl.so.2" : o.nccl) : nullptr;
  set_latency(rt, o.latency_us);
  set_latency(drv, o.latency_us);
  set_latency(nccl, o.latency_us);
  set_graph_build(rt, o.graph_build_us);
  set_graph_build(drv, o.graph_build_us);
  sleep_ms(o.after_load_ms);

  int rc = 0;
  if (!o.nccl_job.empty()) {
    // One rank per process, as torchrun starts them: the ranks share a unique id derived
    // from the job name instead of a broadcast one.
    const char* r = std::getenv("RANK");
    const char* w = std::getenv("WORLD_SIZE");
    if (!r || !w) usage("--nccl-job needs RANK and WORLD_SIZE in the environment");
    Options one = o;
    one.nccl_ranks = std::atoi(w);
    UniqueId id{};
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : o.nccl_job) h = (h ^ c) * 1099511628211ULL;
    std::memcpy(id.internal, &h, sizeof(h));
    rc = run_rank(one, rt, drv, nccl, std::atoi(r), &id);
  } else if (o.nccl_ranks > 1) {
    UniqueId id{};
    sym<int (*)(UniqueId*)>(nccl, "ncclGetUniqueId")(&id);
    while (!o.fork_wait_file.empty() && access(o.fork_wait_file.c_str(), F_OK) != 0) sleep_ms(10);
    std::vector<pid_t> kids;
    for (int r = 0; r < o.nccl_ranks; ++r) {
      pid_t pid = fork();
      if (pid == 0) _exit(run_rank(o, rt, drv, nccl, r, &id));
      kids.push_back(pid);
    }
    for (pid_t k : kids) {
      int st = 0;
      waitpid(k, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
    }
  } else {
    rc = run_rank(o, rt, drv, nccl, 0, nullptr);
  }
  sleep_ms(o.linger_ms);
  return rc;
}
