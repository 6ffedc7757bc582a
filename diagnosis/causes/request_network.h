// `network` keyed to a request: the request's own connection (server pid, fd) could not take
// its response during the request's slow part — writes refused with EAGAIN or cut short (a
// full send buffer: the client is not reading, or the link drops packets), or a blocking
// write whose thread slept in the send path (docs/INFERENCE.md "Causes keyed to requests").
// The waits are the collector's `sock_send_wait` events (requests/send_waits.h); the TCP
// retransmits on the connection (ops tcp_retransmit, tcp_retransmit6, matched by the peer's
// address and port) tell a lossy link from a client that does not read.
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>


namespace causeway::requests {

// network: the request's own connection waited on the socket.
struct NetworkRequestCause {
  static constexpr RequestCause id = RequestCause::network;
  static constexpr std::string_view name = "network";
  static constexpr ClaimTier tier = ClaimTier::own_connection;
  static const char* recommendation(const Culprit& culprit);
  // "; the server's writes to PEER waited on a full send buffer: …"
  static RequestChainWords chain_words(const Culprit& culprit);
  // network_claim on the request's own connection.
  static void find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
};

struct Connection {
  uint32_t server_pid = 0;
  int32_t fd = -1;
  std::string peer;  // "a.b.c.d:port" / "[v6]:port"; "" when the accept was not seen
  std::string comm;  // the server's
};

// [from, to]: the request's slow part. The claim: the time inside it the connection's
// response waited on the socket (a blocking write: only the time its thread slept). Culprit
// {"pid", "comm", "peer", "retransmits", "eagain", "short_writes", "blocked_writes"}.
std::optional<CauseClaim> network_claim(sqlite3* db, int64_t session_id, const Connection& conn, int64_t from, int64_t to);

}  // namespace causeway::requests
