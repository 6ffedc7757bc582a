#include "collector/sock_decode.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>

namespace causeway::collector {

static_assert(offsetof(cw_sock_event, bytes) == 40 && offsetof(cw_sock_event, fd) == 48 &&
              offsetof(cw_sock_event, captured) == 52 && offsetof(cw_sock_event, sock_op) == 54 &&
              offsetof(cw_sock_event, send) == 55 && offsetof(cw_sock_event, enter_ns) == 56 &&
              offsetof(cw_sock_event, offset) == 64 && offsetof(cw_sock_event, total) == 72 &&
              offsetof(cw_sock_event, arrive_first_us) == 80 && offsetof(cw_sock_event, arrive_last_us) == 84 &&
              offsetof(cw_sock_event, data) == CW_SOCK_HDR_BYTES &&
              sizeof(cw_sock_event) == CW_SOCK_HDR_BYTES + CW_SOCK_CAP);
static_assert(sizeof(cw_sock_conn) == 44 && offsetof(cw_sock_conn, local_addr) == 12 &&
              offsetof(cw_sock_conn, peer_addr) == 28);

namespace {

std::optional<Endpoint> sock_conn_end(uint16_t family, const uint8_t* addr, uint16_t port) {
  if (family != AF_INET && family != AF_INET6) return std::nullopt;
  Endpoint e;
  e.family = family;
  std::memcpy(e.addr.data(), addr, family == AF_INET ? 4 : 16);
  e.port = port;
  return e;
}

// ::ffff:a.b.c.d as a.b.c.d (bpf/sock.bpf.h sock_tuple does the same).
Endpoint sock_conn_unmapped(Endpoint e) {
  static constexpr std::array<uint8_t, 12> kMapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (e.family != AF_INET6 || !std::equal(kMapped.begin(), kMapped.end(), e.addr.begin())) return e;
  std::array<uint8_t, 16> v4{};
  std::memcpy(v4.data(), e.addr.data() + 12, 4);
  e.addr = v4;
  e.family = AF_INET;
  return e;
}

}  // namespace

std::optional<Endpoint> conn_peer(const cw_sock_conn& c) { return sock_conn_end(c.family, c.peer_addr, c.peer_port); }
std::optional<Endpoint> conn_local(const cw_sock_conn& c) { return sock_conn_end(c.family, c.local_addr, c.local_port); }

cw_sock_conn own_conn_key(uint32_t netns, const Endpoint& server, const Endpoint& client) {
  cw_sock_conn k;
  std::memset(&k, 0, sizeof(k));
  const Endpoint s = sock_conn_unmapped(server), c = sock_conn_unmapped(client);
  k.netns = netns;
  k.family = static_cast<uint16_t>(s.family);
  k.local_port = s.port;
  k.peer_port = c.port;
  std::memcpy(k.local_addr, s.addr.data(), s.family == AF_INET ? 4 : 16);
  std::memcpy(k.peer_addr, c.addr.data(), c.family == AF_INET ? 4 : 16);
  return k;
}

std::optional<requests::SockRecord> decode_sock(const void* data, size_t size) {
  if (size < CW_SOCK_HDR_BYTES) return std::nullopt;
  cw_sock_event e;
  std::memcpy(&e, data, CW_SOCK_HDR_BYTES);
  if (e.hdr.kind != CW_REC_SOCK || e.captured > CW_SOCK_CAP || CW_SOCK_HDR_BYTES + size_t{e.captured} > size)
    return std::nullopt;
  requests::SockRecord r;
  r.ts_ns = static_cast<int64_t>(e.hdr.ts_ns);
  r.pid = e.hdr.pid;
  r.tid = e.hdr.tid;
  r.fd = e.fd;
  r.tls = (e.hdr.flags & CW_F_SOCK_TLS) != 0;
  switch (e.sock_op) {
    case CW_SOCK_ACCEPT: r.op = requests::SockOp::accept; break;
    case CW_SOCK_READ: r.op = requests::SockOp::read; break;
    case CW_SOCK_WRITE: r.op = requests::SockOp::write; break;
    case CW_SOCK_CLOSE: r.op = requests::SockOp::close; break;
    case CW_SOCK_HANGUP: r.op = requests::SockOp::hangup; break;
    default: return std::nullopt;
  }
  r.bytes = e.bytes > 0 ? static_cast<uint64_t>(e.bytes) : 0;
  const char* payload = static_cast<const char*>(data) + CW_SOCK_HDR_BYTES;
  if (r.op == requests::SockOp::accept) {
    // The connection's identity from the kernel socket; an older record without it, or a
    // socket that was no TCP one, leaves the peer unknown.
    if (e.captured == sizeof(cw_sock_conn)) {
      cw_sock_conn c;
      std::memcpy(&c, payload, sizeof(c));
      if (auto peer = conn_peer(c)) r.peer = peer->text();
      r.local_port = c.local_port;
    }
    return r;
  }
  if (r.op == requests::SockOp::read || r.op == requests::SockOp::write) {
    r.enter_ns = static_cast<int64_t>(e.enter_ns);
    r.offset = e.offset;
    r.total = e.total;
    if (r.op == requests::SockOp::read) {
      r.arrive_first_us = e.arrive_first_us;
      r.arrive_last_us = e.arrive_last_us;
    }
    if (r.op == requests::SockOp::write && e.send == CW_SEND_SHORT) r.send = requests::SendResult::short_write;
    if (r.op == requests::SockOp::write && e.send == CW_SEND_EAGAIN) r.send = requests::SendResult::eagain;
  }
  r.data = std::string_view(payload, e.captured);
  return r;
}

}  // namespace causeway::collector
