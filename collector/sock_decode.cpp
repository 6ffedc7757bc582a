#include "collector/sock_decode.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "bpf/events.h"
#include "collector/endpoint.h"

namespace causeway::collector {

static_assert(offsetof(cw_sock_event, bytes) == 40 && offsetof(cw_sock_event, fd) == 48 &&
              offsetof(cw_sock_event, captured) == 52 && offsetof(cw_sock_event, sock_op) == 54 &&
              offsetof(cw_sock_event, send) == 55 && offsetof(cw_sock_event, addr) == 56 &&
              offsetof(cw_sock_event, enter_ns) == 56 && offsetof(cw_sock_event, offset) == 64 &&
              offsetof(cw_sock_event, total) == 72 && offsetof(cw_sock_event, data) == CW_SOCK_HDR_BYTES &&
              sizeof(cw_sock_event) == CW_SOCK_HDR_BYTES + CW_SOCK_CAP);

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
    default: return std::nullopt;
  }
  r.bytes = e.bytes > 0 ? static_cast<uint64_t>(e.bytes) : 0;
  if (r.op == requests::SockOp::read || r.op == requests::SockOp::write) {
    r.enter_ns = static_cast<int64_t>(e.enter_ns);
    r.offset = e.offset;
    r.total = e.total;
    if (r.op == requests::SockOp::write && e.send == CW_SEND_SHORT) r.send = requests::SendResult::short_write;
    if (r.op == requests::SockOp::write && e.send == CW_SEND_EAGAIN) r.send = requests::SendResult::eagain;
  }
  r.data = std::string_view(static_cast<const char*>(data) + CW_SOCK_HDR_BYTES, e.captured);
  if (r.op == requests::SockOp::accept) {
    if (auto peer = endpoint_from_sockaddr(e.addr)) r.peer = peer->text();
  }
  return r;
}

}  // namespace causeway::collector
