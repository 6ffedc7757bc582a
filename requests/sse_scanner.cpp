#include "requests/sse_scanner.h"

#include "requests/llm_payload.h"

namespace causeway::requests {
namespace {

// "data: [DONE]" is the longest prefix that decides a line.
constexpr size_t kPrefix = 12;

bool starts_field(std::string_view b) {
  for (std::string_view f : {"data:", "event:", "id:", "retry:", ":"})
    if (b.substr(0, f.size()) == f) return true;
  return false;
}

}  // namespace

void SseScanner::gap() {
  line_.clear();
  event_broken_ = true;
  at_line_start_ = false;
  lost_ = true;
  prefix_.clear();
  decided_ = true;
}

// Decides a data line once its prefix says whether it is "[DONE]"; the first data line of
// an event is its token.
void SseScanner::end_line(int64_t ts_ns, std::vector<int64_t>& tokens) {
  if (decided_) return;
  decided_ = true;
  std::string_view p = prefix_;
  if (p.substr(0, 5) != "data:") return;
  std::string_view v = p.substr(5);
  if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  if (v.substr(0, 6) == "[DONE]") return;
  if (!event_has_data_) {
    tokens.push_back(ts_ns);
    event_.ts_ns = ts_ns;
  }
  event_has_data_ = true;
}

// A whole line was seen: a data line's value joins the event's data.
void SseScanner::take_line() {
  std::string_view l = line_;
  if (l.substr(0, 5) == "data:") {
    l.remove_prefix(5);
    if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    if (l.substr(0, 6) != "[DONE]") {
      if (line_cut_ || event_.data.size() + l.size() + 1 > kMaxPayloadBytes) event_broken_ = true;
      else {
        if (event_data_) event_.data += '\n';
        event_.data.append(l);
        event_data_ = true;
      }
    }
  }
  line_.clear();
  line_cut_ = false;
}

void SseScanner::end_event(std::vector<SseEvent>& events) {
  if (event_data_ && !event_broken_ && event_.ts_ns) events.push_back(std::move(event_));
  event_ = SseEvent{};
  event_data_ = false;
  event_broken_ = false;
}

void SseScanner::flush(std::vector<SseEvent>& events) {
  if (!lost_ && !line_.empty()) take_line();
  end_event(events);
}

void SseScanner::feed(std::string_view b, bool fresh, int64_t ts_ns, std::vector<int64_t>& tokens,
                      std::vector<SseEvent>& events) {
  if (fresh && lost_ && starts_field(b)) {
    lost_ = false;
    at_line_start_ = true;
    event_has_data_ = false;
    end_event(events);  // the event the gap cut is broken: dropped
  }
  for (size_t i = 0; i < b.size(); ++i) {
    const char c = b[i];
    if (at_line_start_) {
      at_line_start_ = false;
      prefix_.clear();
      decided_ = false;
      if (c == '\n' || c == '\r') {  // blank line: the event ends
        event_has_data_ = false;
        end_event(events);
        decided_ = true;
        if (c == '\n') at_line_start_ = true;
        continue;
      }
    }
    if (c == '\n') {
      if (!lost_) {
        end_line(ts_ns, tokens);
        take_line();
      }
      line_.clear();
      line_cut_ = false;
      lost_ = false;
      at_line_start_ = true;
      continue;
    }
    if (lost_) continue;
    if (c != '\r') {
      if (line_.size() < kMaxPayloadBytes) line_.push_back(c);
      else line_cut_ = true;
    }
    if (decided_) continue;
    if (c != '\r') prefix_.push_back(c);
    if (prefix_.size() >= kPrefix) end_line(ts_ns, tokens);
  }
  // A data line cut at the end of the copy: its prefix decides now, at this write.
  if (!lost_ && !decided_ && !at_line_start_ && prefix_.size() >= 5 && prefix_.substr(0, 5) == "data:" &&
      prefix_.find("[DONE") == std::string::npos)
    end_line(ts_ns, tokens);
}

}  // namespace causeway::requests
