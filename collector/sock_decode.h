// Socket records of bpf/sock.bpf.h → requests::SockRecord (the HTTP reassembly's input), and
// the connection identity both sides share (struct cw_sock_conn).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "bpf/events.h"
#include "collector/endpoint.h"
#include "requests/record.h"

namespace causeway::collector {

// data/size: one CW_REC_SOCK record as read from the ring (88 bytes + its copy). The
// record's data view points into `data`: valid while the ring's record is. Times stay
// monotonic (the caller adds the session's offset). nullopt: malformed.
std::optional<requests::SockRecord> decode_sock(const void* data, size_t size);

// The two ends of a connection as the kernel side read them; nullopt when it was no TCP
// socket (family 0).
std::optional<Endpoint> conn_peer(const cw_sock_conn& c);
std::optional<Endpoint> conn_local(const cw_sock_conn& c);

// The key under which the kernel side finds one of causeway's own connections (bpf/sock.bpf.h
// own_conns): the server side's identity, from the server's address (where we connect) and
// ours (where we bound), in the server's network namespace. An IPv4-mapped IPv6 address is
// keyed as IPv4, as the kernel side reads it.
cw_sock_conn own_conn_key(uint32_t netns, const Endpoint& server, const Endpoint& client);

}  // namespace causeway::collector
