// Byte streams shaped like what the kernel side captures (a bounded prefix of each syscall
// plus its byte count), fed to requests/tracker: the request capture tests share them.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "requests/tracker.h"

namespace causeway::requests::test_feed {

constexpr uint32_t kPid = 4242;
constexpr size_t kCap = 1024;           // the kernel side's copy per record (bpf/events.h CW_SOCK_CAP)
constexpr size_t kMaxCopy = 64 << 10;   // ... and per syscall (CW_SOCK_MAX_COPY)

struct Feed {
  Tracker t;
  int64_t now = 1'000'000'000;
  explicit Feed(TrackerOptions o = {}) : t(std::move(o)) {}
  void accept(int32_t fd, std::string peer = "10.1.2.3:5555") {
    SockRecord r;
    r.ts_ns = now;
    r.pid = kPid;
    r.fd = fd;
    r.op = SockOp::accept;
    r.peer = std::move(peer);
    t.add(r);
  }
  // One syscall moving `bytes`; only the first kCap are copied.
  void io(int32_t fd, SockOp op, const std::string& bytes, int64_t at) {
    now = at;
    SockRecord r;
    r.ts_ns = at;
    r.pid = kPid;
    r.fd = fd;
    r.op = op;
    r.bytes = bytes.size();
    r.data = std::string_view(bytes).substr(0, std::min(kCap, bytes.size()));
    t.add(r);
  }
  // One syscall as the kernel side records it now (bpf/sock.bpf.h sock_emit_span): a record
  // per kCap piece, each with its offset, up to kMaxCopy; the rest in one record without
  // data. `lost`: pieces the ring had no room for (never recorded).
  void pieces(int32_t fd, SockOp op, const std::string& bytes, int64_t at, std::vector<size_t> lost = {}) {
    now = at;
    for (size_t off = 0, piece = 0; off < bytes.size(); ++piece) {
      SockRecord r;
      r.ts_ns = at;
      r.enter_ns = at - 1;
      r.pid = kPid;
      r.fd = fd;
      r.op = op;
      r.offset = off;
      r.total = bytes.size();
      r.bytes = off < kMaxCopy ? std::min(kCap, bytes.size() - off) : bytes.size() - off;
      if (off < kMaxCopy) r.data = std::string_view(bytes).substr(off, r.bytes);
      off += r.bytes;
      if (std::find(lost.begin(), lost.end(), piece) == lost.end()) t.add(r);
    }
  }
  void read(int32_t fd, const std::string& b, int64_t at) { io(fd, SockOp::read, b, at); }
  void write(int32_t fd, const std::string& b, int64_t at) { io(fd, SockOp::write, b, at); }
  void close(int32_t fd, int64_t at) {
    SockRecord r;
    r.ts_ns = at;
    r.pid = kPid;
    r.fd = fd;
    r.op = SockOp::close;
    t.add(r);
  }
};

inline std::string post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline std::string chunk(const std::string& data) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%zx\r\n", data.size());
  return hex + data + "\r\n";
}

inline const std::string kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n";

inline std::string event(int i) {
  return "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok" +
         std::to_string(i) + "\",\"finish_reason\":null}]}\n\n";
}

// Chunks of events from..to (inclusive), as a server writes them one per chunk.
inline std::string chunks(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) out += chunk(event(i));
  return out;
}

// A connection whose request `id` was read at 1 and whose stream began at 2 (head + event 0).
inline void stream_begun(Feed& f, int32_t fd, const std::string& id) {
  f.accept(fd);
  f.read(fd, post("/v1/completions", "{}", "X-Request-Id: " + id + "\r\n"), 1);
  f.pieces(fd, SockOp::write, kSseHead + chunk(event(0)), 2);
}


}  // namespace causeway::requests::test_feed
