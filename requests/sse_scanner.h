// Server-sent events (text/event-stream, WHATWG HTML §9.2) in a response body seen through
// copied prefixes: finds the write carrying each event's first `data:` line. `data: [DONE]`
// (OpenAI-style end of stream) is not a token. Each event's data (its data lines joined by
// "\n", up to kMaxPayloadBytes) is handed out too when every byte of it was seen, for the
// model and token fields (requests/llm_payload.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace causeway::requests {

// One event's data, with the write that carried its first data line.
struct SseEvent {
  int64_t ts_ns = 0;
  std::string data;
};

class SseScanner {
 public:
  // Body bytes of one write; fresh: the first body bytes of that write (a write normally
  // starts an event, which resynchronises after bytes went unseen).
  void feed(std::string_view bytes, bool fresh, int64_t ts_ns, std::vector<int64_t>& tokens,
            std::vector<SseEvent>& events);
  // Bytes of the body that were not copied: where the next line starts is unknown.
  void gap();
  // The body ended: an event whose blank line never came is handed out.
  void flush(std::vector<SseEvent>& events);

 private:
  void end_line(int64_t ts_ns, std::vector<int64_t>& tokens);
  void take_line();
  void end_event(std::vector<SseEvent>& events);
  bool at_line_start_ = true;
  bool lost_ = false;          // inside a line whose start went unseen
  bool decided_ = false;       // this line's kind is known (prefix long enough, or ended)
  bool event_has_data_ = false;
  std::string prefix_;         // first bytes of the current line, up to kPrefix
  std::string line_;           // the current line, up to kMaxPayloadBytes
  bool line_cut_ = false;      // ... longer than that
  SseEvent event_;             // the current event's data so far
  bool event_data_ = false;    // it has a (non-[DONE]) data line
  bool event_broken_ = false;  // some of its bytes went unseen, or it is too long
};

}  // namespace causeway::requests
