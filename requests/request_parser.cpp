#include "requests/request_parser.h"

#include <algorithm>

#include "requests/llm_payload.h"

namespace causeway::requests {
namespace {

using http_stream::Frame;
using http_stream::Side;

std::string host_of_peer(std::string_view peer) {
  if (peer.empty()) return {};
  if (peer.front() == '[') return std::string(peer.substr(1, peer.find(']') - 1));
  return std::string(peer.substr(0, peer.rfind(':')));
}

}  // namespace

void RequestParser::read(const SockRecord& r) {
  if (c_.ignored) return;
  Side& s = c_.in;
  const uint64_t lost = c_.in_pieces.lost_before(r);
  if (c_.proto == Protocol::unknown_yet && !sniff(r)) return;
  const ReadTimes t{r.arrive_first_ns(), r.arrive_last_ns(), r.ts_ns};
  if (lost) gap(lost, t);
  if (s.frame == Frame::desync) {
    if (r.offset != 0 || !looks_like_request_line(r.data)) return;
    s = Side{};
  }
  s.buf.append(r.data);
  run(t);
  if (r.bytes > r.data.size()) gap(r.bytes - r.data.size(), t);
}

// Decides what the connection speaks from its first bytes; false when it is not HTTP/1.x.
bool RequestParser::sniff(const SockRecord& r) {
  const Protocol p = sniff_protocol(c_.in.buf + std::string(r.data));
  if (p == Protocol::unknown_yet) {
    if (r.bytes > r.data.size()) {  // more came than was copied, yet too little to tell
      ++n_.non_http;
      c_.ignored = true;
    } else {
      if (c_.in.buf.empty()) c_.in.head_ts = r.arrive_first_ns();
      c_.in.buf.append(r.data);
    }
    return false;
  }
  c_.proto = p;
  if (p == Protocol::http1) return true;
  if (p == Protocol::tls) ++n_.tls;
  else if (p == Protocol::http2) ++n_.http2;
  else ++n_.non_http;
  c_.ignored = true;
  c_.in.buf.clear();
  return false;
}

void RequestParser::desync() {
  ++n_.desync;
  c_.in = Side{};
  c_.in.frame = Frame::desync;
  if (c_.reading) c_.reading->placeholder = true;  // its end is unknown: TTFT would be wrong
  c_.reading.reset();
}

void RequestParser::placeholder() {
  auto e = std::make_shared<Exchange>();
  e->placeholder = true;
  c_.waiting.push_back(e);
}

// The request's last byte came in the read of `t`: it arrived at t.last (the whole read's
// last byte: a read that also brought the next request's first bytes gives their arrival).
void RequestParser::finish(const ReadTimes& t) {
  if (c_.reading) {
    Exchange& e = *c_.reading;
    e.req.end_ns = std::max(t.last, e.req.start_ns);
    e.req.read_end_ns = t.read;
    if (!e.request_body.empty()) {
      RequestFields f = read_request_fields(e.request_body, e.request_cut);
      e.req.model = std::move(f.model);
      e.req.max_tokens = f.max_tokens;
    }
    e.request_body.clear();
    e.request_body.shrink_to_fit();
  }
  c_.reading.reset();
  c_.in.head_ts = 0;
  c_.in.frame = Frame::head;
}

void RequestParser::start(const HttpHead& h, int64_t first_arrival) {
  auto e = std::make_shared<Exchange>();
  Request& q = e->req;
  q.pid = c_.pid;
  q.fd = c_.fd;
  q.method = h.method;
  q.path = h.target.substr(0, h.target.find('?'));
  q.peer = c_.peer;
  q.local_port = c_.local_port;
  q.tls = c_.plaintext;
  q.start_ns = c_.in.head_ts ? c_.in.head_ts : first_arrival;
  ++c_.seq;
  if (auto id = h.field("x-request-id"); id && !id->empty()) {
    q.request_id = std::string(id->substr(0, 128));
  } else {
    q.request_id = "gen-" + std::to_string(c_.pid) + "-" + std::to_string(c_.id) + "-" + std::to_string(c_.seq);
    q.id_generated = true;
  }
  if (auto t = h.field(o_.tenant_header); t && !t->empty()) q.tenant = std::string(t->substr(0, 128));
  else q.tenant = host_of_peer(c_.peer);
  c_.reading = e;
  c_.waiting.push_back(e);
}

void RequestParser::body(std::string_view b) {
  if (!c_.reading) return;
  c_.reading->req.prompt_bytes += b.size();
  http_stream::keep_body(c_.reading->request_body, c_.reading->request_cut, b);
}

// Body bytes out of sight: counted; the fields after them are not read.
void RequestParser::body_unseen(uint64_t n) {
  if (!c_.reading) return;
  c_.reading->req.prompt_bytes += n;
  c_.reading->request_cut = true;
}

void RequestParser::run(const ReadTimes& t) {
  Side& s = c_.in;
  while (!s.buf.empty() || s.frame == Frame::head) {
    switch (s.frame) {
      case Frame::head: {
        if (s.buf.empty()) return;
        HttpHead h;
        const HeadResult r = http_stream::take_head(s, t.first, h, n_, parse_request_head);
        if (r == HeadResult::incomplete) return;
        if (r == HeadResult::invalid) {
          placeholder();
          desync();
          return;
        }
        start(h, t.first);
        uint64_t length = 0;
        switch (request_body(h, length)) {
          case BodyKind::length: s.frame = Frame::length; s.left = length; break;
          case BodyKind::chunked: s.frame = Frame::chunk_size; break;
          default: finish(t); break;
        }
        break;
      }
      case Frame::length:
      case Frame::chunk_data:
      case Frame::chunk_size:
      case Frame::chunk_crlf:
      case Frame::trailers:
        if (!http_stream::body_step(s, [&](std::string_view b) { body(b); }, [&] { finish(t); }, [&] { desync(); }))
          return;
        break;
      case Frame::until_close:
      case Frame::desync:
        s.buf.clear();
        return;
    }
  }
}

void RequestParser::gap(uint64_t unseen, const ReadTimes& t) {
  Side& s = c_.in;
  while (unseen > 0) {
    if (http_stream::gap_step(s, unseen, [&](uint64_t n) { body_unseen(n); }, [&] { finish(t); })) continue;
    if (s.frame == Frame::desync) return;
    if (s.frame == Frame::head) {
      // A head longer than one syscall's copy: its fields are out of sight.
      ++n_.headers_truncated;
      placeholder();
      c_.in = Side{};
      c_.in.frame = Frame::desync;
      return;
    }
    desync();  // chunk framing out of sight
    return;
  }
}

}  // namespace causeway::requests
