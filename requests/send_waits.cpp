#include "requests/send_waits.h"

#include <algorithm>

#include "bpf/events.h"

namespace causeway::requests {
namespace {

// Open waits kept at once: beyond, a new one is not opened (a server with this many stalled
// connections at once is already explained by its first ones).
constexpr size_t kMaxOpen = 65536;

uint64_t key_of(uint32_t pid, int32_t fd) { return (uint64_t{pid} << 32) | static_cast<uint32_t>(fd); }

}  // namespace

void SendWaits::end(uint64_t key, int64_t at) {
  auto it = open_.find(key);
  if (it == open_.end()) return;
  SendWait w = it->second.w;
  w.end_ns = std::max(at, w.start_ns);
  done_.push_back(w);
  open_.erase(it);
}

void SendWaits::add(const SockRecord& r) {
  last_ts_ = std::max(last_ts_, r.ts_ns);
  const uint64_t key = key_of(r.pid, r.fd);
  if (r.op == SockOp::close) return end(key, r.ts_ns);
  // A new connection on the fd: the old one's close went unseen; its wait ended by then.
  if (r.op == SockOp::accept) return end(key, r.ts_ns);
  if (r.op != SockOp::write) return;
  const bool same_syscall = [&] {
    auto it = blocking_enter_.find(r.tid);
    return it != blocking_enter_.end() && it->second == r.enter_ns;
  }();
  if (r.enter_ns && r.ts_ns - r.enter_ns >= kBlockingWriteNs && !same_syscall) {
    blocking_enter_[r.tid] = r.enter_ns;
    done_.push_back({r.pid, r.tid, r.fd, r.enter_ns, r.ts_ns, r.send == SendResult::eagain,
                     r.send == SendResult::short_write, true});
  }
  auto it = open_.find(key);
  if (r.send == SendResult::ok) {
    // The records of a short write's syscall all carry its flag: an ok record is a later write.
    if (it != open_.end()) end(key, r.ts_ns);
    return;
  }
  if (it == open_.end()) {
    if (open_.size() >= kMaxOpen) return;
    Open o;
    o.w = {r.pid, r.tid, r.fd, r.ts_ns, r.ts_ns};
    it = open_.emplace(key, o).first;
  } else if (r.enter_ns && r.enter_ns == it->second.last_enter_ns) {
    return;  // another iovec of a syscall already counted
  }
  it->second.last_enter_ns = r.enter_ns;
  if (r.send == SendResult::eagain) ++it->second.w.eagain;
  else ++it->second.w.short_writes;
}

std::vector<SendWait> SendWaits::take() {
  std::vector<SendWait> out;
  out.swap(done_);
  return out;
}

void SendWaits::finish() {
  while (!open_.empty()) end(open_.begin()->first, last_ts_);
}

CallRecord send_wait_record(const SendWait& w) {
  CallRecord c;
  c.ts_ns = w.start_ns;
  c.dur_ns = w.end_ns - w.start_ns;
  c.pid = w.pid;
  c.tid = w.tid;
  c.op = CW_OP_SOCK_SEND_WAIT;
  c.a = {w.fd, w.eagain, w.short_writes, w.blocking ? 1 : 0, 0, 0};
  return c;
}

}  // namespace causeway::requests
