// Building blocks for synthetic sessions: a deterministic RNG and a builder that turns
// "thread T was preempted by tar on CPU 3 from a to b" into the exact sched records the
// live collector would have written. Scenarios (synth/scenario_*.cpp) compose these.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tracedb/records.h"
#include "tracedb/store_writer.h"

namespace causeway::synth {

// splitmix64: tiny, fast, and identical on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  int64_t uniform_ns(double lo, double hi) { return static_cast<int64_t>(uniform(lo, hi)); }
  bool chance(double p) { return unit() < p; }
  // Log-normal jitter around `median` (sigma ~0.1 gives realistic call-time spread).
  int64_t around(double median, double sigma = 0.08) {
    double u1 = unit(), u2 = unit();
    double n = std::sqrt(-2.0 * std::log(u1 + 1e-300)) * std::cos(6.283185307179586 * u2);
    return static_cast<int64_t>(median * std::exp(sigma * n));
  }

 private:
  uint64_t s_;
};

inline constexpr int64_t kUs = 1'000;
inline constexpr int64_t kMs = 1'000'000;
inline constexpr int64_t kSec = 1'000'000'000;

// Thread states as the kernel reports prev_state.
inline constexpr int64_t kRunnable = 0;
inline constexpr int64_t kSleeping = 1;       // TASK_INTERRUPTIBLE
inline constexpr int64_t kUninterruptible = 2;  // TASK_UNINTERRUPTIBLE (D)

class DemoBuilder {
 public:
  explicit DemoBuilder(StoreWriter& writer) : w_(writer) {}

  void process(uint32_t pid, uint32_t ppid, const std::string& comm, const std::string& cmdline,
               const std::string& exe, int64_t first_ns, int64_t last_ns, uint64_t cgroup_id = 0,
               const std::string& container_id = "", const std::string& cgroup_path = "");
  void thread(uint32_t tid, uint32_t pid, const std::string& comm);
  // Registers a stack (innermost frame first) and returns its id for call().
  uint64_t stack(const std::vector<std::string>& frames);

  void call(uint32_t pid, uint32_t tid, uint16_t op, int64_t ts, int64_t dur, std::array<int64_t, 6> a = {},
            int64_t ret = 0, uint64_t stack_id = 0, int32_t cpu = -1);
  void host_event(uint32_t pid, uint32_t tid, uint16_t op, int64_t ts, int64_t dur, std::array<int64_t, 6> a = {},
                  int32_t cpu = -1);

  // tid (runnable) is switched out for `by` on cpu over [from, to], then switched back in.
  void preempt(uint32_t tid, uint32_t pid, int32_t cpu, int64_t from, int64_t to, uint32_t by_tid, uint32_t by_pid);
  // tid blocks in `state` over [from, to]; the CPU idles; `waker` wakes it just before `to`.
  void block(uint32_t tid, uint32_t pid, int32_t cpu, int64_t from, int64_t to, int64_t state, uint32_t waker_tid,
             uint32_t waker_pid);

  // Rows of the inference tables (docs/INFERENCE.md): a request, one scrape of an engine.
  void request(const RequestRecord& r) { w_.push_meta(r); }
  void engine_scrape(const EngineSampleRecord& r) { w_.push_meta(r); }

  uint64_t calls() const { return calls_; }
  uint64_t sched_rows() const { return sched_; }
  uint64_t dropped() const { return dropped_; }

 private:
  StoreWriter& w_;
  uint64_t calls_ = 0, sched_ = 0, dropped_ = 0;
};

// Packs grid/block dims the way the collector stores them: x | y << 21 | z << 42.
inline int64_t pack_dim3(int64_t x, int64_t y, int64_t z) { return x | (y << 21) | (z << 42); }

}  // namespace causeway::synth
