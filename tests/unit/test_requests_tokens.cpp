// Model, token counts, TPOT and how exchanges end, from byte streams as the kernel side
// captures them (requests/llm_payload.h, requests/tracker.h, requests/to_record.h).
#include <doctest/doctest.h>

#include <string>

#include "diagnosis/request_latency.h"
#include "requests/llm_payload.h"
#include "requests/to_record.h"
#include "requests/tracker.h"
#include "tests/support/test_support.h"
#include "tests/unit/request_db.h"
#include "tests/unit/request_feed.h"
#include "tests/unit/request_rows.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using namespace causeway::requests;
using namespace causeway::requests::test_feed;

namespace {

// An OpenAI chat/completions stream as vLLM writes it: a role-only first delta, one content
// delta per event (`contents` of them, the first at t0 then `gap` apart), a finish event,
// then (include_usage) an event with empty choices and the usage, then [DONE].
void chat_stream(Feed& f, int32_t fd, int contents, int64_t t0, int64_t gap, bool usage) {
  const std::string head = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"served-7b\",\"choices\":[";
  f.write(fd, kSseHead, t0 - 5);
  f.write(fd, chunk(head + R"({"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null})" "\n\n"), t0 - 1);
  for (int i = 0; i < contents; ++i)
    f.write(fd, chunk(head + R"({"index":0,"delta":{"content":" tok"},"finish_reason":null}],"usage":null})" "\n\n"), t0 + i * gap);
  const int64_t end = t0 + (contents - 1) * gap + 1;
  f.write(fd, chunk(head + R"({"index":0,"delta":{},"finish_reason":"length"}],"usage":null})" "\n\n"), end);
  if (usage)
    f.write(fd, chunk(head + R"(],"usage":{"prompt_tokens":812,"total_tokens":1012,"completion_tokens":200}})" "\n\n"), end + 1);
  f.write(fd, chunk("data: [DONE]\n\n") + "0\r\n\r\n", end + 2);
}

const std::string kChatBody =
    R"({"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"hi, \"there\""}],)"
    R"("max_tokens":200,"stream":true,"stream_options":{"include_usage":true}})";

}  // namespace

TEST_CASE("payload fields: the request's model and cap, the response's usage and content") {
  RequestFields q = read_request_fields(kChatBody);
  CHECK(q.model == "meta-llama/Llama-3.1-8B-Instruct");
  CHECK(q.max_tokens == 200u);
  CHECK(read_request_fields(R"({"inputs":"x","parameters":{"max_new_tokens":64}})").max_tokens == 64u);
  CHECK(read_request_fields(R"({"messages":[{"role":"user","content":"no model"}]})").model.empty());
  // A nested "model" (a tool's argument) is not the request's.
  CHECK(read_request_fields(R"({"tools":[{"model":"x"}],"model":"m"})").model == "m");

  ResponseFields r = read_response_fields(
      R"({"id":"c","object":"chat.completion","model":"m2","choices":[{"message":{"content":"ok"}}],)"
      R"("usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})");
  CHECK(r.model == "m2");
  CHECK(r.prompt_tokens == 12u);
  CHECK(r.completion_tokens == 34u);
  CHECK(r.content_choices == 0);  // a whole message, not a streamed delta

  CHECK(read_response_fields(R"({"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}},{"delta":{}}]})").content_choices == 2);
  CHECK(read_response_fields(R"({"choices":[{"text":" x","index":0}]})").content_choices == 1);
  CHECK(read_response_fields(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})").content_choices == 0);
  CHECK(read_response_fields(R"({"token":{"id":5,"text":" y","special":false},"generated_text":null})").content_choices == 1);
  CHECK(read_response_fields(R"({"details":{"finish_reason":"length","generated_tokens":17}})").completion_tokens == 17u);
  CHECK_FALSE(read_response_fields(R"({"usage":null})").completion_tokens);
}

TEST_CASE("payload fields: a cut body gives what came before the cut, never a shortened number") {
  // The number may be the first digits of 12345: not read.
  CHECK_FALSE(read_response_fields(R"({"model":"m","usage":{"prompt_tokens":7,"completion_tokens":12)", true).completion_tokens);
  ResponseFields r = read_response_fields(R"({"model":"m","usage":{"prompt_tokens":7,"completion_tokens":12)", true);
  CHECK(r.model == "m");
  CHECK(r.prompt_tokens == 7u);
  // The model comes first in a long prompt cut by the copy.
  CHECK(read_request_fields(R"({"model":"big","messages":[{"role":"user","content":"aaaa)", true).model == "big");
  // Invalid UTF-8 in a value: read, with U+FFFD, and what follows still read.
  RequestFields bad = read_request_fields("{\"model\":\"m\xff\xfe\",\"max_tokens\":5}");
  CHECK(bad.model == "m\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(bad.max_tokens == 5u);
  // Not JSON at all: nothing.
  CHECK(read_request_fields("model=x&max_tokens=3").model.empty());
  CHECK(read_request_fields(std::string(70000, '{')).model.empty());
}

TEST_CASE("a streamed chat with include_usage: model, tokens, content events, TPOT") {
  Feed f;
  f.accept(7);
  f.read(7, post("/v1/chat/completions", kChatBody, "X-Request-Id: u1\r\n"), 100);
  chat_stream(f, 7, 200, 1'000'000, 20'000, true);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  const Request& q = rs[0];
  CHECK(q.model == "meta-llama/Llama-3.1-8B-Instruct");  // the request's, not the response's "served-7b"
  CHECK(q.max_tokens == 200u);
  CHECK(q.input_tokens == 812u);
  CHECK(q.output_tokens == 200u);
  CHECK(q.content_events == 200);
  CHECK(q.token_ns.size() == 203);  // role, 200 contents, finish, usage: data events ([DONE] excluded)
  CHECK(q.first_content_ns == 1'000'000);
  CHECK(q.last_content_ns == 1'000'000 + 199 * 20'000);
  CHECK(q.end == RequestEnd::complete);
  auto rec = to_record(q);
  REQUIRE(rec.tpot_ns);
  CHECK(*rec.tpot_ns == 20'000);  // (last - first content write) / (200 - 1)
  CHECK(rec.input_tokens == 812);
  CHECK(rec.output_tokens == 200);
  CHECK(rec.model == "meta-llama/Llama-3.1-8B-Instruct");
  CHECK(rec.content_events == 200u);
  CHECK(rec.end_reason == "complete");
}

TEST_CASE("several tokens per event: TPOT from the server's count, not the events") {
  Feed f;
  f.accept(8);
  f.read(8, post("/v1/chat/completions", kChatBody), 100);
  // 50 events carrying 200 tokens (the usage says 200): 4 tokens an event, 80 µs apart.
  chat_stream(f, 8, 50, 1'000'000, 80'000, true);
  auto rec = to_record(f.t.take().at(0));
  CHECK(rec.content_events == 50u);
  CHECK(rec.output_tokens == 200);
  REQUIRE(rec.tpot_ns);
  CHECK(*rec.tpot_ns == 49 * 80'000 / 199);
}

TEST_CASE("absent usage: tokens and TPOT are null, the model still known") {
  Feed f;
  f.accept(9);
  f.read(9, post("/v1/chat/completions", R"({"model":"m","messages":[],"stream":true})"), 100);
  chat_stream(f, 9, 10, 1'000'000, 20'000, false);
  auto q = f.t.take().at(0);
  CHECK(q.model == "m");
  CHECK_FALSE(q.input_tokens);
  CHECK_FALSE(q.output_tokens);
  CHECK(q.content_events == 10);
  auto rec = to_record(q);
  CHECK_FALSE(rec.tpot_ns);
  CHECK_FALSE(rec.output_tokens);
  CHECK_FALSE(rec.max_tokens);
}

TEST_CASE("a non-streamed JSON response: usage from the body, no TPOT") {
  Feed f;
  f.accept(10);
  f.read(10, post("/v1/completions", R"({"model":"m","prompt":"x","max_tokens":16})"), 100);
  const std::string body =
      R"({"id":"cmpl-9","object":"text_completion","model":"m","choices":[{"index":0,"text":" a b c"}],)"
      R"("usage":{"prompt_tokens":3,"total_tokens":19,"completion_tokens":16}})";
  // The body in two writes, the second beyond the first's copy.
  const std::string all = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  f.write(10, all.substr(0, 100), 200);
  f.write(10, all.substr(100), 210);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].input_tokens == 3u);
  CHECK(rs[0].output_tokens == 16u);
  CHECK(rs[0].max_tokens == 16u);
  auto rec = to_record(rs[0]);
  CHECK_FALSE(rec.tpot_ns);
  CHECK(rec.streamed == false);
}

TEST_CASE("a response body out of sight: usage not read rather than read wrong") {
  Feed f;
  f.accept(11);
  f.read(11, post("/v1/completions", R"({"model":"m"})"), 100);
  std::string body = R"({"choices":[{"text":")" + std::string(3000, 'x') + R"("}],"usage":{"prompt_tokens":3,"completion_tokens":999}})";
  f.write(11, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, 200);
  auto rs = f.t.take();  // one write: only kCap bytes copied, the usage past them
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].complete);
  CHECK_FALSE(rs[0].output_tokens);
}

TEST_CASE("how exchanges end: complete, 4xx/5xx, aborted by the server, client disconnected, trace end") {
  TrackerOptions o;
  o.hangups_reported = true;
  Feed f(o);
  // 1: a 429 and 2: a 500, both complete.
  f.accept(20);
  f.read(20, post("/v1/completions", "{}"), 1);
  f.write(20, "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 2\r\n\r\n{}", 2);
  f.read(20, post("/v1/completions", "{}"), 3);
  f.write(20, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", 4);
  // 3: the server closes mid-stream without the last chunk, the client still there: aborted.
  f.accept(21);
  f.read(21, post("/v1/completions", "{}", "X-Request-Id: abort\r\n"), 5);
  f.write(21, kSseHead + chunk(event(0)), 6);
  f.close(21, 7);
  // 4: the client goes (EOF), then the server closes: disconnected.
  f.accept(22);
  f.read(22, post("/v1/completions", "{}", "X-Request-Id: gone\r\n"), 8);
  f.write(22, kSseHead + chunk(event(0)), 9);
  SockRecord h;
  h.ts_ns = 10;
  h.pid = kPid;
  h.fd = 22;
  h.op = SockOp::hangup;
  f.t.add(h);
  f.close(22, 11);
  // 5: still streaming when the trace stops.
  f.accept(23);
  f.read(23, post("/v1/completions", "{}", "X-Request-Id: open\r\n"), 12);
  f.write(23, kSseHead + chunk(event(0)), 13);
  f.t.finish();
  auto rs = f.t.take();
  REQUIRE(rs.size() == 5);
  CHECK(rs[0].status == 429);
  CHECK(rs[0].end == RequestEnd::complete);
  CHECK(rs[1].status == 500);
  CHECK(rs[1].end == RequestEnd::complete);
  CHECK(rs[2].request_id == "abort");
  CHECK(rs[2].end == RequestEnd::aborted);
  CHECK(rs[3].request_id == "gone");
  CHECK(rs[3].end == RequestEnd::disconnected);
  CHECK(rs[4].request_id == "open");
  CHECK(rs[4].end == RequestEnd::trace_end);
  CHECK(to_record(rs[2]).end_reason == "aborted");
  CHECK(f.t.counters().disconnected == 2);  // both cut by a close

  // A capture without hangup records cannot tell them apart: a close mid-response is a disconnect.
  Feed plain;
  plain.accept(30);
  plain.read(30, post("/v1/completions", "{}"), 1);
  plain.write(30, kSseHead + chunk(event(0)), 2);
  plain.close(30, 3);
  CHECK(plain.t.take().at(0).end == RequestEnd::disconnected);
}

TEST_CASE("the requests answer: tokens, TPOT, errors, aborted and disconnected per path and tenant, the failed listed") {
  Db db([](StoreWriter& w) {
    for (int i = 0; i < 10; ++i) {
      Request r = streamed("ok" + std::to_string(i), i * 10, 10, 5, 2);
      r.model = "m";
      r.input_tokens = 100 + i;
      r.output_tokens = 9;  // 5 events carrying 9 tokens: 8 ms / 8
      w.push_meta(to_record(r));
    }
    Request no_usage = streamed("plain", 200, 10, 5, 2, "t2");
    w.push_meta(to_record(no_usage));
    Request aborted = streamed("ab", 300, 10, 3, 2, "t2");
    aborted.end = RequestEnd::aborted;
    aborted.complete = false;
    w.push_meta(to_record(aborted));
    Request gone = streamed("gone", 400, 10, 3, 2, "t2");
    gone.end = RequestEnd::disconnected;
    gone.complete = false;
    w.push_meta(to_record(gone));
    w.push_meta(to_record(streamed("e503", 500, 1, 0, 0, "t2", 503)));
  });
  auto h = open_read_only(db.path);
  REQUIRE(h);
  RequestQuery q;
  q.slowest = 100;
  auto r = request_latency_json(h->get(), q);
  REQUIRE(r);
  const auto& d = (*r)["requests"];
  CHECK(d["errors"] == 1);
  CHECK(d["aborted"] == 1);
  CHECK(d["disconnected"] == 1);
  CHECK(d["tpot_ms"]["n"] == 10);
  CHECK(d["tpot_ms"]["p50"].get<double>() == doctest::Approx(1.0));  // (5 - 1) * 2 ms / (9 - 1)
  REQUIRE(d["by"].size() == 2);
  const auto& t1 = d["by"][0]["tenant"] == "t1" ? d["by"][0] : d["by"][1];
  const auto& t2 = d["by"][0]["tenant"] == "t2" ? d["by"][0] : d["by"][1];
  CHECK(t1["errors"] == 0);
  CHECK(t2["errors"] == 1);
  CHECK(t2["aborted"] == 1);
  CHECK(t2["disconnected"] == 1);
  CHECK(t2["tpot_ms"]["p50"].is_null());
  bool saw_ok = false, saw_plain = false;
  for (const auto& s : d["slowest"]) {
    CHECK(s.contains("peer"));
    CHECK(s["tls"] == false);
    if (s["request_id"] == "ok3") {
      saw_ok = true;
      CHECK(s["model"] == "m");
      CHECK(s["input_tokens"] == 103);
      CHECK(s["output_tokens"] == 9);
      CHECK(s["tpot_ms"].get<double>() == doctest::Approx(1.0));
      CHECK(s["end"] == "complete");
    }
    if (s["request_id"] == "plain") {
      saw_plain = true;
      CHECK(s["model"].is_null());
      CHECK(s["input_tokens"].is_null());
      CHECK(s["output_tokens"].is_null());
      CHECK(s["tpot_ms"].is_null());
    }
  }
  CHECK(saw_ok);
  CHECK(saw_plain);
  REQUIRE(d["failed"].size() == 3);
  CHECK(d["failed"][0]["request_id"] == "ab");
  CHECK(d["failed"][0]["end"] == "aborted");
  CHECK(d["failed"][1]["end"] == "disconnected");
  CHECK(d["failed"][2]["status"] == 503);
  const std::string text = request_latency_text(*r);
  CHECK(text.find("1 errors, 1 aborted, 1 disconnected") != std::string::npos);
  CHECK(text.find("TPOT p50 1") != std::string::npos);
  CHECK(text.find("model m, 10") != std::string::npos);
  CHECK(text.find("failed (") != std::string::npos);
}
