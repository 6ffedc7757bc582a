#include "requests/tracker.h"

#include <algorithm>
#include <charconv>

namespace causeway::requests {
// Named (not anonymous): Tracker::Connection holds these.
namespace tracker_detail {

// Where one direction of a connection is in its current message.
enum class Frame : uint8_t { head, length, chunk_size, chunk_data, chunk_crlf, trailers, until_close, desync };

// A chunk-size line longer than this is not one (RFC 9112 §7.1: hex size + extensions).
constexpr size_t kMaxChunkLine = 1024;

// A request and its response. A placeholder stands for a request whose head could not be
// read: its response is framed (to find the next one) and dropped.
struct Exchange {
  Request req;
  bool placeholder = false;
};
using ExchangePtr = std::shared_ptr<Exchange>;

// Parses the hex size of a chunk-size line ("1a;ext=x\r"); false when it is not one.
bool chunk_size_of(std::string_view line, uint64_t& size) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (const size_t semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line.empty()) return false;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
  return ec == std::errc() && p == line.data() + line.size();
}

}  // namespace tracker_detail
using namespace tracker_detail;
namespace {

std::string host_of(std::string_view peer) {
  if (peer.empty()) return {};
  if (peer.front() == '[') return std::string(peer.substr(1, peer.find(']') - 1));
  return std::string(peer.substr(0, peer.rfind(':')));
}

}  // namespace

// One direction's framing state.
struct Side {
  Frame frame = Frame::head;
  std::string buf;      // copied bytes not yet consumed
  uint64_t left = 0;    // body / chunk bytes still to come
  int64_t head_ts = 0;  // the record holding the head's first byte
  bool chunk_start = false;  // the next body bytes begin a chunk's data
};

// Where a direction's last record ended in its syscall, to see a piece of a long syscall
// that never came (the ring was full): the next piece's offset jumps past it, or the next
// syscall starts before the last one's total was reached.
struct Pieces {
  int64_t enter_ns = 0;
  uint64_t end = 0;
  uint64_t total = 0;
  // Bytes lost before r, and r noted as the last record.
  uint64_t lost_before(const SockRecord& r) {
    const bool same = r.offset > 0 && r.enter_ns == enter_ns;
    const uint64_t lost = same ? (r.offset > end ? r.offset - end : 0) : (total > end ? total - end : 0) + r.offset;
    enter_ns = r.enter_ns;
    end = r.offset + r.bytes;
    total = std::max(r.total, end);
    return lost;
  }
};

struct Tracker::Connection {
  uint64_t id = 0;
  uint32_t pid = 0;
  int32_t fd = -1;
  std::string peer;
  Protocol proto = Protocol::unknown_yet;
  bool ignored = false;  // not HTTP/1.x: nothing more is parsed
  uint64_t seq = 0;
  Side in, out;
  Pieces in_pieces, out_pieces;
  bool out_unseen = false;            // the response being written had streamed bytes not copied
  ExchangePtr reading;                // the request being read
  ExchangePtr writing;                // the exchange whose response is being written (null: unmatched)
  bool writing_streamed = false;
  SseScanner sse;
  std::deque<ExchangePtr> waiting;    // requests without a response head yet, in order
  bool plaintext = false;             // TLS read through libssl: only its plaintext records are parsed
};

namespace {

class Framer {
 public:
  Framer(Tracker::Connection& c, Counters& n, std::vector<Request>& done, const TrackerOptions& o)
      : c_(c), n_(n), done_(done), o_(o) {}

  // A record starting mid-syscall (offset > 0) is never taken as the start of a message: only
  // a syscall's first bytes resynchronise a direction whose framing was lost.
  void read(const SockRecord& r) {
    if (c_.ignored) return;
    Side& s = c_.in;
    const uint64_t lost = c_.in_pieces.lost_before(r);
    if (c_.proto == Protocol::unknown_yet && !sniff(r)) return;
    if (lost) gap_in(lost, r.ts_ns);
    if (s.frame == Frame::desync) {
      if (r.offset != 0 || !looks_like_request_line(r.data)) return;
      s = Side{};
    }
    s.buf.append(r.data);
    run_in(r.ts_ns);
    if (r.bytes > r.data.size()) gap_in(r.bytes - r.data.size(), r.ts_ns);
  }

  void write(const SockRecord& r) {
    if (c_.ignored) return;
    Side& s = c_.out;
    if (const uint64_t lost = c_.out_pieces.lost_before(r)) gap_out(lost, r.ts_ns);
    if (s.frame == Frame::desync) {
      if (r.offset != 0 || r.data.substr(0, 7) != "HTTP/1.") return;
      s = Side{};
    }
    s.buf.append(r.data);
    fresh_ = r.offset == 0;
    if (c_.writing && !c_.writing->placeholder) c_.writing->req.last_byte_ns = r.ts_ns;
    run_out(r.ts_ns);
    if (r.bytes > r.data.size()) gap_out(r.bytes - r.data.size(), r.ts_ns);
  }

  // The connection closed: a response running until close is complete; anything else open
  // was cut off.
  void close(int64_t ts, bool trace_end) {
    if (c_.writing) {
      if (c_.out.frame == Frame::until_close) {
        finish_response(c_.writing->placeholder ? ts : c_.writing->req.last_byte_ns);
      } else {
        if (!trace_end && !c_.writing->placeholder) ++n_.disconnected;
        emit(c_.writing);
        c_.writing.reset();
      }
    }
    for (ExchangePtr& e : c_.waiting) {
      if (!trace_end && !e->placeholder) ++n_.disconnected;
      emit(e);
    }
    c_.waiting.clear();
  }

 private:
  // The line-framed parts of a chunked body: the size line, the CRLF after a chunk's data,
  // the trailer lines (RFC 9112 §7.1). ended: the blank line closing the message was read.
  enum class LineStep : uint8_t { wait, next, ended, lost };
  static LineStep chunk_line(Side& s) {
    const size_t nl = s.buf.find('\n');
    if (nl == std::string::npos) return s.buf.size() > kMaxChunkLine ? LineStep::lost : LineStep::wait;
    const std::string line = s.buf.substr(0, nl);
    s.buf.erase(0, nl + 1);
    if (s.frame == Frame::chunk_crlf) {
      s.frame = Frame::chunk_size;
      return LineStep::next;
    }
    if (s.frame == Frame::trailers) return line.empty() || line == "\r" ? LineStep::ended : LineStep::next;
    uint64_t size = 0;
    if (!chunk_size_of(line, size)) return LineStep::lost;
    if (size == 0) {
      s.frame = Frame::trailers;
    } else {
      s.frame = Frame::chunk_data;
      s.left = size;
      s.chunk_start = true;
    }
    return LineStep::next;
  }

  static void enter_crlf(Side& s) {
    s.frame = Frame::chunk_crlf;
    s.left = 2;
  }

  // One step through a body's framing, the same in both directions: `take` gets the body
  // bytes, `finish` ends the message, `lost` the chunk framing. False: wait for more bytes
  // (or the framing was lost).
  template <typename Take, typename Finish, typename Lost>
  static bool body_step(Side& s, Take take, Finish finish, Lost lost) {
    if (s.frame == Frame::length || s.frame == Frame::chunk_data) {
      const uint64_t n = std::min<uint64_t>(s.left, s.buf.size());
      take(std::string_view(s.buf).substr(0, n));
      s.chunk_start = false;
      s.buf.erase(0, n);
      s.left -= n;
      if (s.left == 0) {
        if (s.frame == Frame::length) finish();
        else enter_crlf(s);
      }
      return true;
    }
    switch (chunk_line(s)) {
      case LineStep::wait: return false;
      case LineStep::lost: lost(); return false;
      case LineStep::ended: finish(); return true;
      case LineStep::next: return true;
    }
    return true;
  }

  // Body bytes out of sight (beyond a syscall's copy), the same in both directions: `take`
  // counts them, the framing is followed by count (and the CRLF after a chunk's data).
  // False: not in a body; the caller decides.
  template <typename Take, typename Finish>
  static bool gap_step(Side& s, uint64_t& unseen, Take take, Finish finish) {
    if (s.frame == Frame::until_close) {
      take(unseen);
      unseen = 0;
      return true;
    }
    if (s.frame == Frame::length || s.frame == Frame::chunk_data) {
      const uint64_t n = std::min(unseen, s.left);
      take(n);
      s.chunk_start = false;
      s.left -= n;
      unseen -= n;
      if (s.left == 0) {
        if (s.frame == Frame::length) finish();
        else enter_crlf(s);
      }
      return true;
    }
    if (s.frame == Frame::chunk_crlf) {
      skip_crlf(s, unseen);
      return true;
    }
    return false;
  }

  static void skip_crlf(Side& s, uint64_t& unseen) {
    const uint64_t n = std::min(unseen, s.left);
    unseen -= n;
    s.left -= n;
    if (s.left == 0) s.frame = Frame::chunk_size;
  }

  // Decides what the connection speaks from its first bytes; false when it is not HTTP/1.x.
  bool sniff(const SockRecord& r) {
    const Protocol p = sniff_protocol(c_.in.buf + std::string(r.data));
    if (p == Protocol::unknown_yet) {
      if (r.bytes > r.data.size()) {  // more came than was copied, yet too little to tell
        ++n_.non_http;
        c_.ignored = true;
      } else {
        if (c_.in.buf.empty()) c_.in.head_ts = r.ts_ns;
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

  void desync_in() {
    ++n_.desync;
    c_.in = Side{};
    c_.in.frame = Frame::desync;
    if (c_.reading) c_.reading->placeholder = true;  // its end is unknown: TTFT would be wrong
    c_.reading.reset();
  }

  void placeholder_in() {
    auto e = std::make_shared<Exchange>();
    e->placeholder = true;
    c_.waiting.push_back(e);
  }

  void finish_request(int64_t ts) {
    if (c_.reading) c_.reading->req.end_ns = ts;
    c_.reading.reset();
    c_.in.head_ts = 0;
    c_.in.frame = Frame::head;
  }

  void start_request(const HttpHead& h, int64_t ts) {
    auto e = std::make_shared<Exchange>();
    Request& q = e->req;
    q.pid = c_.pid;
    q.fd = c_.fd;
    q.method = h.method;
    q.path = h.target.substr(0, h.target.find('?'));
    q.peer = c_.peer;
    q.tls = c_.plaintext;
    q.start_ns = c_.in.head_ts ? c_.in.head_ts : ts;
    ++c_.seq;
    if (auto id = h.field("x-request-id"); id && !id->empty()) {
      q.request_id = std::string(id->substr(0, 128));
    } else {
      q.request_id = "gen-" + std::to_string(c_.pid) + "-" + std::to_string(c_.id) + "-" + std::to_string(c_.seq);
      q.id_generated = true;
    }
    if (auto t = h.field(o_.tenant_header); t && !t->empty()) q.tenant = std::string(t->substr(0, 128));
    else q.tenant = host_of(c_.peer);
    c_.reading = e;
    c_.waiting.push_back(e);
  }

  // The head at the front of a side's bytes, consumed when complete; one that cannot be
  // parsed is counted when it is over the size a head may have.
  HeadResult take_head(Side& s, int64_t ts, HttpHead& h, HeadResult (*parse)(std::string_view, HttpHead&, size_t&)) {
    if (!s.head_ts) s.head_ts = ts;
    size_t len = 0;
    const HeadResult r = parse(s.buf, h, len);
    if (r == HeadResult::invalid && s.buf.size() > kMaxHeadBytes) ++n_.headers_oversized;
    if (r == HeadResult::complete) s.buf.erase(0, len);
    return r;
  }

  void body_in(uint64_t n) {
    if (c_.reading) c_.reading->req.prompt_bytes += n;
  }

  void run_in(int64_t ts) {
    Side& s = c_.in;
    while (!s.buf.empty() || s.frame == Frame::head) {
      switch (s.frame) {
        case Frame::head: {
          if (s.buf.empty()) return;
          HttpHead h;
          const HeadResult r = take_head(s, ts, h, parse_request_head);
          if (r == HeadResult::incomplete) return;
          if (r == HeadResult::invalid) {
            placeholder_in();
            desync_in();
            return;
          }
          start_request(h, ts);
          uint64_t length = 0;
          switch (request_body(h, length)) {
            case BodyKind::length: s.frame = Frame::length; s.left = length; break;
            case BodyKind::chunked: s.frame = Frame::chunk_size; break;
            default: finish_request(ts); break;
          }
          break;
        }
        case Frame::length:
        case Frame::chunk_data:
        case Frame::chunk_size:
        case Frame::chunk_crlf:
        case Frame::trailers:
          if (!body_step(s, [&](std::string_view b) { body_in(b.size()); }, [&] { finish_request(ts); },
                         [&] { desync_in(); }))
            return;
          break;
        case Frame::until_close:
        case Frame::desync:
          s.buf.clear();
          return;
      }
    }
  }

  void gap_in(uint64_t unseen, int64_t ts) {
    Side& s = c_.in;
    while (unseen > 0) {
      if (gap_step(s, unseen, [&](uint64_t n) { body_in(n); }, [&] { finish_request(ts); })) continue;
      if (s.frame == Frame::desync) return;
      if (s.frame == Frame::head) {
        // A head longer than one syscall's copy: its fields are out of sight.
        ++n_.headers_truncated;
        placeholder_in();
        c_.in = Side{};
        c_.in.frame = Frame::desync;
        return;
      }
      desync_in();  // chunk framing out of sight
      return;
    }
  }

  void emit(const ExchangePtr& e) {
    if (e->placeholder || e->req.start_ns == 0) return;
    if (e->req.end_ns == 0) e->req.end_ns = e->req.start_ns;
    ++n_.requests;
    done_.push_back(std::move(e->req));
    e->placeholder = true;  // emitted once
  }

  void finish_response(int64_t ts) {
    if (c_.writing) {
      if (!c_.writing->placeholder) {
        c_.writing->req.complete = true;
        c_.writing->req.last_byte_ns = ts;
      }
      emit(c_.writing);
    }
    c_.writing.reset();
    c_.writing_streamed = false;
    c_.out.frame = Frame::head;
    c_.out.head_ts = 0;
    c_.sse = SseScanner{};
  }

  void desync_out() {
    ++n_.desync;
    if (c_.writing) emit(c_.writing);  // status and first byte are known; complete stays false
    c_.writing.reset();
    c_.out = Side{};
    c_.out.frame = Frame::desync;
  }

  void body_out(std::string_view bytes, int64_t ts) {
    if (!c_.writing || c_.writing->placeholder) return;
    Request& q = c_.writing->req;
    q.response_bytes += bytes.size();
    if (c_.writing_streamed) {
      std::vector<int64_t> tokens;
      // A write's first bytes, or a chunk's (servers write an event per chunk), may begin
      // an event: where the scanner looks again after bytes went unseen.
      c_.sse.feed(bytes, fresh_ || c_.out.chunk_start, ts, tokens);
      for (int64_t t : tokens)
        if (q.token_ns.size() < o_.max_tokens) q.token_ns.push_back(t);
    }
    fresh_ = false;
  }

  void start_response(const HttpHead& h, int64_t ts) {
    ExchangePtr e;
    if (!c_.waiting.empty()) {
      e = c_.waiting.front();
      c_.waiting.pop_front();
    } else {
      ++n_.unmatched_responses;
    }
    c_.writing = e;
    c_.out_unseen = false;
    auto ct = h.field("content-type");
    c_.writing_streamed = ct && ct->substr(0, 17) == "text/event-stream";
    if (e && !e->placeholder) {
      e->req.status = h.status;
      e->req.first_byte_ns = c_.out.head_ts ? c_.out.head_ts : ts;
      e->req.last_byte_ns = ts;
      e->req.streamed = c_.writing_streamed;
    }
  }

  void run_out(int64_t ts) {
    Side& s = c_.out;
    while (!s.buf.empty() || s.frame == Frame::head) {
      switch (s.frame) {
        case Frame::head: {
          if (s.buf.empty()) return;
          HttpHead h;
          const HeadResult r = take_head(s, ts, h, parse_response_head);
          if (r == HeadResult::incomplete) return;
          if (r == HeadResult::invalid) return desync_out();
          if (h.status >= 100 && h.status < 200 && h.status != 101) {  // interim (100 Continue)
            s.head_ts = 0;
            break;
          }
          start_response(h, ts);
          if (h.status == 101) {  // Upgrade (WebSocket, h2c): no longer HTTP/1.1
            finish_response(ts);
            c_.ignored = true;
            return;
          }
          uint64_t length = 0;
          const std::string method = c_.writing ? c_.writing->req.method : "GET";
          switch (response_body(h, method, length)) {
            case BodyKind::length: s.frame = Frame::length; s.left = length; break;
            case BodyKind::chunked: s.frame = Frame::chunk_size; break;
            case BodyKind::until_close: s.frame = Frame::until_close; break;
            case BodyKind::none: finish_response(ts); break;
          }
          break;
        }
        case Frame::length:
        case Frame::chunk_data:
        case Frame::chunk_size:
        case Frame::chunk_crlf:
        case Frame::trailers:
          if (!body_step(s, [&](std::string_view b) { body_out(b, ts); }, [&] { finish_response(ts); },
                         [&] { desync_out(); }))
            return;
          break;
        case Frame::until_close:
          body_out(s.buf, ts);
          s.buf.clear();
          return;
        case Frame::desync:
          s.buf.clear();
          return;
      }
    }
  }

  void gap_out(uint64_t unseen, int64_t ts) {
    Side& s = c_.out;
    while (unseen > 0) {
      auto take = [&](uint64_t n) {
        if (c_.writing && !c_.writing->placeholder) c_.writing->req.response_bytes += n;
        if (c_.writing_streamed && !c_.out_unseen) ++n_.sse_unseen;
        c_.out_unseen = true;
        c_.sse.gap();
      };
      if (gap_step(s, unseen, take, [&] { finish_response(ts); })) continue;
      if (s.frame == Frame::desync) return;
      if (s.frame == Frame::head) ++n_.headers_truncated;
      desync_out();
      return;
    }
  }

  Tracker::Connection& c_;
  Counters& n_;
  std::vector<Request>& done_;
  const TrackerOptions& o_;
  bool fresh_ = false;
};

uint64_t conn_key(uint32_t pid, int32_t fd) { return static_cast<uint64_t>(pid) << 32 | static_cast<uint32_t>(fd); }

}  // namespace

Tracker::Tracker(TrackerOptions options) : o_(std::move(options)) {
  std::transform(o_.tenant_header.begin(), o_.tenant_header.end(), o_.tenant_header.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
}

Tracker::~Tracker() = default;

void Tracker::close(uint64_t key) {
  auto it = conns_.find(key);
  if (it == conns_.end()) return;
  Framer(*it->second, counters_, done_, o_).close(0, false);
  conns_.erase(it);
}

void Tracker::add(const SockRecord& r) {
  if (r.op == SockOp::write && r.send == SendResult::eagain) return;  // moved nothing (requests/send_waits.h)
  const uint64_t key = conn_key(r.pid, r.fd);
  if (r.op == SockOp::close) {
    auto it = conns_.find(key);
    if (it == conns_.end()) return;
    Framer(*it->second, counters_, done_, o_).close(r.ts_ns, false);
    conns_.erase(it);
    return;
  }
  auto it = conns_.find(key);
  if (r.op == SockOp::accept && it != conns_.end()) {  // the fd was reused: its close went unseen
    close(key);
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
    ++counters_.connections;
    it = conns_.emplace(key, std::move(c)).first;
  }
  if (r.op == SockOp::accept) return;
  // TLS read through libssl (docs/INFERENCE.md "TLS"): from its first plaintext record on, a
  // connection is parsed from the plaintext and its own (cipher) bytes are skipped; the
  // handshake already sniffed as TLS no longer counts as unread TLS.
  Connection& conn = *it->second;
  if (r.tls && !conn.plaintext) {
    if (conn.proto == Protocol::tls && counters_.tls) --counters_.tls;
    conn.proto = Protocol::unknown_yet;
    conn.ignored = false;
    conn.in = conn.out = Side{};
    conn.in_pieces = conn.out_pieces = Pieces{};
    conn.plaintext = true;
  }
  if (conn.plaintext != r.tls) return;
  Framer f(conn, counters_, done_, o_);
  if (r.op == SockOp::read) f.read(r);
  else f.write(r);
}

std::vector<Request> Tracker::take() {
  std::vector<Request> out;
  out.swap(done_);
  return out;
}

void Tracker::finish() {
  for (auto& [key, c] : conns_) Framer(*c, counters_, done_, o_).close(0, true);
  conns_.clear();
}

}  // namespace causeway::requests
