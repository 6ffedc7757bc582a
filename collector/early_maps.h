// The maps of a process, read the moment it makes its first traced call.
//
// The drain snapshots a process's maps when it decodes its first record; a process that lives
// a few ms (a launcher's short CUDA helpers, a test binary) can be gone by then on a busy host,
// and without its maps none of its stacks can be symbolized (they would read only "native
// unwind stopped"). The BPF side announces each process on a ring of its own at its first
// traced call (bpf/maps.bpf.h, rb_new_procs); one thread here, at real-time priority when it
// may have it, reads /proc/PID/maps as soon as it is woken, while the process is still inside
// that call. The drain takes the copy when its own read finds the process gone
// (docs/COLLECTOR.md, "Symbols of short-lived processes").
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collector/proc_maps.h"
#include "collector/ring_wait.h"

struct ring_buffer;

namespace causeway::collector {

class EarlyMaps {
 public:
  // ring_fd: the BPF ring of announced pids. Starts the reading thread; a ring that cannot be
  // mapped leaves it off (the drain's own snapshot still works) and says so in `error()`.
  explicit EarlyMaps(int ring_fd);
  ~EarlyMaps();
  EarlyMaps(const EarlyMaps&) = delete;
  EarlyMaps& operator=(const EarlyMaps&) = delete;

  // The maps read for pid, once (the copy is handed over); waits briefly if they are being read.
  std::optional<std::vector<Mapping>> take(uint32_t pid);
  bool realtime() const { return realtime_; }
  const std::string& error() const { return error_; }

 private:
  static int on_pid(void* ctx, void* data, size_t size);
  void read_now(uint32_t pid);
  void run();

  // At most this many copies are kept; ones nobody took (the drain read the live maps itself,
  // or lost the process's records) go oldest first.
  static constexpr size_t kMaxKept = 512;

  ring_buffer* ring_ = nullptr;
  std::optional<RingWait> wait_;  // the ring's wake-ups and stop; without it, a poll timeout
  std::atomic<bool> stop_{false};
  bool realtime_ = false;
  std::string error_;
  std::mutex mu_;
  std::condition_variable read_done_;
  std::set<uint32_t> reading_;
  std::unordered_map<uint32_t, std::vector<Mapping>> kept_;
  std::deque<uint32_t> order_;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace causeway::collector
