#include "requests/tracker.h"

#include <algorithm>
#include <cstdint>

#include "requests/connection.h"
#include "requests/request_parser.h"
#include "requests/response_parser.h"

namespace causeway::requests {
namespace {

uint64_t conn_key(uint32_t pid, int32_t fd) { return static_cast<uint64_t>(pid) << 32 | static_cast<uint32_t>(fd); }

// TLS read through libssl: the plaintext records carry no arrival; the cipher bytes the
// socket reads brought just before do (docs/INFERENCE.md "Arrival time").
void note_cipher_arrival(Tracker::Connection& c, const SockRecord& r) {
  if (!r.arrive_first_us) return;
  if (!c.cipher_first_ns) c.cipher_first_ns = r.arrive_first_ns();
  c.cipher_last_ns = std::max(c.cipher_last_ns, r.arrive_last_ns());
}

uint32_t cipher_us_before(int64_t at, int64_t t) { return static_cast<uint32_t>(std::clamp<int64_t>((at - t + 999) / 1000, 1, UINT32_MAX)); }

SockRecord with_cipher_arrival(Tracker::Connection& c, const SockRecord& r) {
  SockRecord p = r;
  p.arrive_first_us = cipher_us_before(r.ts_ns, c.cipher_first_ns);
  p.arrive_last_us = cipher_us_before(r.ts_ns, c.cipher_last_ns);
  c.cipher_first_ns = c.cipher_last_ns = 0;
  return p;
}

}  // namespace

Tracker::Tracker(TrackerOptions options) : o_(std::move(options)) {
  std::transform(o_.tenant_header.begin(), o_.tenant_header.end(), o_.tenant_header.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
}

Tracker::~Tracker() = default;

// The connection closed (ts; 0 when unseen) or the trace ended: a response running until
// close is complete; anything else open was cut off, by the server (aborted) or after the
// client left (disconnected, requests/tracker.h `hangups_reported`).
void Tracker::end_connection(Connection& c, int64_t ts, bool trace_end) {
  const RequestEnd cut = trace_end                              ? RequestEnd::trace_end
                         : c.hangup_ns || !o_.hangups_reported ? RequestEnd::disconnected
                                                                : RequestEnd::aborted;
  ResponseParser(c, counters_, done_, o_).close(ts, cut, !trace_end);
  for (ExchangePtr& e : c.waiting) {
    if (!trace_end && !e->placeholder) ++counters_.disconnected;
    emit_exchange(*e, cut, counters_, done_);
  }
  c.waiting.clear();
}

void Tracker::close(uint64_t key, int64_t ts) {
  auto it = conns_.find(key);
  if (it == conns_.end()) return;
  end_connection(*it->second, ts, false);
  conns_.erase(it);
}

void Tracker::add(const SockRecord& r) {
  if (r.op == SockOp::write && r.send == SendResult::eagain) return;  // moved nothing (requests/send_waits.h)
  const uint64_t key = conn_key(r.pid, r.fd);
  if (r.op == SockOp::hangup) {
    if (auto it = conns_.find(key); it != conns_.end() && !it->second->hangup_ns) it->second->hangup_ns = r.ts_ns;
    return;
  }
  if (r.op == SockOp::close) return close(key, r.ts_ns);
  auto it = conns_.find(key);
  if (r.op == SockOp::accept && it != conns_.end()) {  // the fd was reused: its close went unseen
    close(key, 0);
    it = conns_.end();
  }
  if (it == conns_.end()) {
    if (conns_.size() >= o_.max_connections) {
      ++counters_.desync;
      return;
    }
    auto c = std::make_unique<Connection>();
    c->id = next_conn_++;
    c->pid = r.pid;
    c->fd = r.fd;
    c->peer = r.peer;
    c->local_port = r.local_port;
    ++counters_.connections;
    it = conns_.emplace(key, std::move(c)).first;
  }
  // TLS read through libssl (docs/INFERENCE.md "TLS"): from its first plaintext record on, a
  // connection is parsed from the plaintext and its own (cipher) bytes are skipped; the
  // handshake already sniffed as TLS no longer counts as unread TLS.
  Connection& conn = *it->second;
  if (r.op == SockOp::read && !r.tls) {
    // Before the first plaintext, only the last socket read counts (the handshake's are not
    // the request's); after it, every socket read since the last plaintext read.
    if (!conn.plaintext) conn.cipher_first_ns = conn.cipher_last_ns = 0;
    note_cipher_arrival(conn, r);
  }
  if (r.tls && !conn.plaintext) {
    if (conn.proto == Protocol::tls && counters_.tls) --counters_.tls;
    conn.proto = Protocol::unknown_yet;
    conn.ignored = false;
    conn.in = conn.out = http_stream::Side{};
    conn.in_pieces = conn.out_pieces = http_stream::Pieces{};
    conn.plaintext = true;
  }
  if (conn.plaintext && r.tls && r.op == SockOp::read && conn.cipher_first_ns)
    return RequestParser(conn, counters_, o_).read(with_cipher_arrival(conn, r));
  if (conn.plaintext != r.tls) return;
  if (r.op == SockOp::read) RequestParser(conn, counters_, o_).read(r);
  else if (r.op == SockOp::write) ResponseParser(conn, counters_, done_, o_).write(r);
}

std::vector<Request> Tracker::take() {
  std::vector<Request> out;
  out.swap(done_);
  return out;
}

void Tracker::finish() {
  for (auto& [key, c] : conns_) end_connection(*c, 0, true);
  conns_.clear();
}

}  // namespace causeway::requests
