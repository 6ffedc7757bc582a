// The socket ring's own drain (docs/COLLECTOR.md "Socket records"). A busy server makes
// thousands of records a second in bursts (5,000 connections accepted at once), and the main
// drain loop may be held up by the writer, stack symbolization or a loaded host; records that
// wait in the kernel's ring past its size are lost. This thread, at real-time priority when it
// may have it, only copies each record out of the ring into a queue of its own, so the ring
// is emptied within a poll of the producer's wake-up; the session decodes and reassembles
// them (requests/tracker.h) when its loop gets to them. The queue is bounded: what goes past
// the cap is counted (collector_stats dropped_sock_queue), never silently lost.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collector/ring_wait.h"

struct ring_buffer;

namespace causeway::collector {

// Records as copied: each a 4-byte length then its bytes.
struct SockBatch {
  std::vector<char> bytes;
  template <typename F>
  void for_each(F&& f) const {
    size_t at = 0;
    while (at + sizeof(uint32_t) <= bytes.size()) {
      uint32_t n;
      __builtin_memcpy(&n, bytes.data() + at, sizeof(n));
      at += sizeof(n);
      if (at + n > bytes.size()) return;
      f(bytes.data() + at, static_cast<size_t>(n));
      at += n;
    }
  }
};

class SockDrain {
 public:
  // ring_fd: bpf/sock.bpf.h rb_sock. max_queued: bytes the queue may hold before records are
  // counted as lost.
  SockDrain(int ring_fd, size_t max_queued);
  ~SockDrain();
  SockDrain(const SockDrain&) = delete;
  SockDrain& operator=(const SockDrain&) = delete;

  const std::string& error() const { return error_; }
  bool realtime() const { return realtime_; }
  // The records copied since the last call, in ring order.
  SockBatch take();
  // Stops the thread, then copies what is left in the ring (the producers are stopped).
  void finish();
  uint64_t dropped() const { return dropped_.load(); }
  uint64_t records() const { return records_.load(); }

 private:
  static int on_record(void* ctx, void* data, size_t size);
  void run();
  void stop_thread();

  const size_t max_queued_;
  ring_buffer* ring_ = nullptr;
  std::optional<RingWait> wait_;  // the ring's wake-ups and stop; without it, a poll timeout
  std::string error_;
  bool realtime_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> dropped_{0}, records_{0};
  std::mutex mu_;
  SockBatch queued_;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace causeway::collector
