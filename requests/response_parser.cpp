#include "requests/response_parser.h"

namespace causeway::requests {
namespace {

using http_stream::Frame;
using http_stream::Side;

// One payload's fields: the server's token counts (the last event saying them wins: vLLM's
// continuous usage stats repeat them in every event), the model when the request named
// none, and whether it carries generated text (ts: the write carrying it; 0: not an event).
void take_response_fields(Request& q, const ResponseFields& f, int64_t ts) {
  if (f.prompt_tokens) q.input_tokens = f.prompt_tokens;
  if (f.completion_tokens) q.output_tokens = f.completion_tokens;
  if (q.model.empty()) q.model = f.model;
  if (f.content_choices == 0 || ts == 0) return;
  ++q.content_events;
  if (!q.first_content_ns) q.first_content_ns = ts;
  q.last_content_ns = ts;
}

}  // namespace

void ResponseParser::write(const SockRecord& r) {
  if (c_.ignored) return;
  Side& s = c_.out;
  if (const uint64_t lost = c_.out_pieces.lost_before(r)) gap(lost, r.ts_ns);
  if (s.frame == Frame::desync) {
    if (r.offset != 0 || r.data.substr(0, 7) != "HTTP/1.") return;
    s = Side{};
  }
  s.buf.append(r.data);
  fresh_ = r.offset == 0;
  if (c_.writing && !c_.writing->placeholder) c_.writing->req.last_byte_ns = r.ts_ns;
  run(r.ts_ns);
  if (r.bytes > r.data.size()) gap(r.bytes - r.data.size(), r.ts_ns);
}

void ResponseParser::close(int64_t ts, RequestEnd cut, bool count_cut) {
  if (!c_.writing) return;
  if (c_.out.frame == Frame::until_close) {
    finish(c_.writing->placeholder ? ts : c_.writing->req.last_byte_ns);
    return;
  }
  if (count_cut && !c_.writing->placeholder) ++n_.disconnected;
  emit(cut);
  c_.writing.reset();
}

void ResponseParser::take_events(Request& q, const std::vector<SseEvent>& events) {
  for (const SseEvent& ev : events) take_response_fields(q, read_response_fields(ev.data), ev.ts_ns);
}

// The response ends (or is cut): the fields of what its body showed.
void ResponseParser::settle(Exchange& e) {
  if (e.placeholder) return;
  if (c_.writing_streamed) {
    std::vector<SseEvent> events;
    c_.sse.flush(events);
    take_events(e.req, events);
  } else if (!e.response_body.empty()) {
    take_response_fields(e.req, read_response_fields(e.response_body, e.response_cut), 0);
  }
  e.response_body.clear();
  e.response_body.shrink_to_fit();
}

void ResponseParser::emit(RequestEnd end) {
  settle(*c_.writing);
  emit_exchange(*c_.writing, end, n_, done_);
}

void ResponseParser::finish(int64_t ts) {
  if (c_.writing) {
    if (!c_.writing->placeholder) {
      c_.writing->req.complete = true;
      c_.writing->req.last_byte_ns = ts;
    }
    emit(RequestEnd::complete);
  }
  c_.writing.reset();
  c_.writing_streamed = false;
  c_.out.frame = Frame::head;
  c_.out.head_ts = 0;
  c_.sse = SseScanner{};
}

void ResponseParser::desync() {
  ++n_.desync;
  if (c_.writing) emit(RequestEnd::lost);  // status and first byte are known; complete stays false
  c_.writing.reset();
  c_.out = Side{};
  c_.out.frame = Frame::desync;
}

void ResponseParser::body(std::string_view bytes, int64_t ts) {
  if (!c_.writing || c_.writing->placeholder) return;
  Request& q = c_.writing->req;
  q.response_bytes += bytes.size();
  if (c_.writing_streamed) {
    std::vector<int64_t> tokens;
    std::vector<SseEvent> events;
    // A write's first bytes, or a chunk's (servers write an event per chunk), may begin
    // an event: where the scanner looks again after bytes went unseen.
    c_.sse.feed(bytes, fresh_ || c_.out.chunk_start, ts, tokens, events);
    for (int64_t t : tokens)
      if (q.token_ns.size() < o_.max_tokens) q.token_ns.push_back(t);
    take_events(q, events);
  } else {
    http_stream::keep_body(c_.writing->response_body, c_.writing->response_cut, bytes);
  }
  fresh_ = false;
}

void ResponseParser::start(const HttpHead& h, int64_t ts) {
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

void ResponseParser::run(int64_t ts) {
  Side& s = c_.out;
  while (!s.buf.empty() || s.frame == Frame::head) {
    switch (s.frame) {
      case Frame::head: {
        if (s.buf.empty()) return;
        HttpHead h;
        const HeadResult r = http_stream::take_head(s, ts, h, n_, parse_response_head);
        if (r == HeadResult::incomplete) return;
        if (r == HeadResult::invalid) return desync();
        if (h.status >= 100 && h.status < 200 && h.status != 101) {  // interim (100 Continue)
          s.head_ts = 0;
          break;
        }
        start(h, ts);
        if (h.status == 101) {  // Upgrade (WebSocket, h2c): no longer HTTP/1.1
          finish(ts);
          c_.ignored = true;
          return;
        }
        uint64_t length = 0;
        const std::string method = c_.writing ? c_.writing->req.method : "GET";
        switch (response_body(h, method, length)) {
          case BodyKind::length: s.frame = Frame::length; s.left = length; break;
          case BodyKind::chunked: s.frame = Frame::chunk_size; break;
          case BodyKind::until_close: s.frame = Frame::until_close; break;
          case BodyKind::none: finish(ts); break;
        }
        break;
      }
      case Frame::length:
      case Frame::chunk_data:
      case Frame::chunk_size:
      case Frame::chunk_crlf:
      case Frame::trailers:
        if (!http_stream::body_step(s, [&](std::string_view b) { body(b, ts); }, [&] { finish(ts); }, [&] { desync(); }))
          return;
        break;
      case Frame::until_close:
        body(s.buf, ts);
        s.buf.clear();
        return;
      case Frame::desync:
        s.buf.clear();
        return;
    }
  }
}

void ResponseParser::gap(uint64_t unseen, int64_t ts) {
  Side& s = c_.out;
  while (unseen > 0) {
    auto take = [&](uint64_t n) {
      if (c_.writing && !c_.writing->placeholder) {
        c_.writing->req.response_bytes += n;
        c_.writing->response_cut = true;
      }
      if (c_.writing_streamed && !c_.out_unseen) ++n_.sse_unseen;
      c_.out_unseen = true;
      c_.sse.gap();
    };
    if (http_stream::gap_step(s, unseen, take, [&] { finish(ts); })) continue;
    if (s.frame == Frame::desync) return;
    if (s.frame == Frame::head) ++n_.headers_truncated;
    desync();
    return;
  }
}

}  // namespace causeway::requests
