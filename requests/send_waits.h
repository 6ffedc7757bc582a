// When a connection's response waited on the socket: from socket records (bpf/sock.bpf.h) to
// spans of a full send buffer or a write that slept for room, per (server pid, fd), for the
// request-level `network` cause (diagnosis/causes/request_network.h, docs/INFERENCE.md "network").
// Pure code: records in, spans out; the collector stores them as `sock_send_wait` events.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "requests/record.h"
#include "tracedb/records.h"

namespace causeway::requests {

// A write syscall at least this long may have slept in the send path for room (the claim
// keeps only the time its thread slept, from the sched rows).
inline constexpr int64_t kBlockingWriteNs = 1'000'000;

struct SendWait {
  uint32_t pid = 0;  // server
  uint32_t tid = 0;  // the thread whose write met the full buffer (or slept)
  int32_t fd = -1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t eagain = 0;        // writes refused with EAGAIN during it
  uint32_t short_writes = 0;  // writes that moved less than asked during it
  bool blocking = false;      // one write syscall [entry, exit]: the thread may have slept in it
};

// A non-blocking server: the wait starts at the exit of the first write refused (EAGAIN) or
// cut short, and ends at the exit of the next write that moved everything it was asked (the
// response's bytes stopped queueing), or at the connection's close. A blocking write of at
// least kBlockingWriteNs is a wait of its own over the syscall.
class SendWaits {
 public:
  void add(const SockRecord& r);
  std::vector<SendWait> take();
  // The trace ends: open waits end at the last record seen.
  void finish();

 private:
  struct Open {
    SendWait w;
    int64_t last_enter_ns = 0;  // the last write syscall counted (its records share the entry time)
  };
  void end(uint64_t key, int64_t at);
  std::unordered_map<uint64_t, Open> open_;
  std::unordered_map<uint32_t, int64_t> blocking_enter_;  // tid → entry of the last blocking write taken
  std::vector<SendWait> done_;
  int64_t last_ts_ = 0;
};

// The `events` row of a wait (op sock_send_wait: a0 fd, a1 eagain, a2 short_writes, a3 blocking).
CallRecord send_wait_record(const SendWait& w);

}  // namespace causeway::requests
