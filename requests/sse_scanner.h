// Server-sent events (text/event-stream, WHATWG HTML §9.2) in a response body seen through
// copied prefixes: finds the write carrying each event's first `data:` line. `data: [DONE]`
// (OpenAI-style end of stream) is not a token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace causeway::requests {

class SseScanner {
 public:
  // Body bytes of one write; fresh: the first body bytes of that write (a write normally
  // starts an event, which resynchronises after bytes went unseen).
  void feed(std::string_view bytes, bool fresh, int64_t ts_ns, std::vector<int64_t>& tokens);
  // Bytes of the body that were not copied: where the next line starts is unknown.
  void gap();

 private:
  void end_line(int64_t ts_ns, std::vector<int64_t>& tokens);
  bool at_line_start_ = true;
  bool lost_ = false;          // inside a line whose start went unseen
  bool decided_ = false;       // this line's kind is known (prefix long enough, or ended)
  bool event_has_data_ = false;
  std::string prefix_;         // first bytes of the current line, up to kPrefix
};

}  // namespace causeway::requests
