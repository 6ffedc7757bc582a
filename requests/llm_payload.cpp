#include "requests/llm_payload.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "common/sanitize.h"

namespace causeway::requests {
namespace llm_payload_detail {

// Walks a JSON document with nlohmann's SAX interface and hands each scalar to `on_value`
// with its path ("usage.completion_tokens", "choices.[].delta.content"). A parse error (a
// body cut short) stops the walk; what came before it stands.
class PathWalker {
 public:
  virtual ~PathWalker() = default;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(int64_t v) { return v >= 0 ? number(static_cast<uint64_t>(v)) : true; }
  bool number_unsigned(uint64_t v) { return number(v); }
  bool number_float(double, const std::string&) { return true; }
  bool string(std::string& v) {
    on_string(path(), v);
    return true;
  }
  bool binary(nlohmann::json::binary_t&) { return true; }
  bool start_object(size_t) { return open(false); }
  bool start_array(size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (!frames_.empty()) frames_.back().key = k;
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 protected:
  virtual void on_string(const std::string& path, const std::string& v) = 0;
  virtual void on_number(const std::string& path, uint64_t v) = 0;
  // An object inside the array at `path` ended.
  virtual void on_element_end(const std::string&) {}

 private:
  struct Frame {
    bool array = false;
    std::string name;  // this container's path
    std::string key;   // objects: the key of the value being read
  };

  std::string path() const {
    if (frames_.empty()) return {};
    const Frame& f = frames_.back();
    const std::string& leaf = f.array ? std::string("[]") : f.key;
    return f.name.empty() ? leaf : f.name + "." + leaf;
  }
  bool number(uint64_t v) {
    on_number(path(), v);
    return true;
  }
  bool open(bool array) {
    std::string name = path();
    frames_.push_back({array, std::move(name), {}});
    return frames_.size() < 64;  // deeper is not an inference payload
  }
  bool close() {
    if (frames_.empty()) return true;
    const Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (!f.array && !frames_.empty() && frames_.back().array) on_element_end(frames_.back().name);
    return true;
  }
  std::vector<Frame> frames_;
};

// JSON strings are UTF-8 (RFC 8259 §8.1) and nlohmann's lexer stops at a bad byte: a
// payload with one is read with the bad bytes as U+FFFD, so the fields after it are read too.
// A cut payload is read up to its last ',', '{' or '[': a number or literal there may be
// the first digits of a longer one, while a string cut short is never complete (no closing quote).
template <typename Walker>
void walk(std::string_view payload, bool cut, Walker& w) {
  if (payload.size() > kMaxPayloadBytes) {
    payload = payload.substr(0, kMaxPayloadBytes);
    cut = true;
  }
  if (cut) {
    const size_t last = payload.find_last_of(",{[");
    payload = payload.substr(0, last == std::string_view::npos ? 0 : last + 1);
  }
  const std::string text = repair_utf8(payload);
  nlohmann::json::sax_parse(text, &w, nlohmann::json::input_format_t::json, false);
}

class RequestWalker : public PathWalker {
 public:
  RequestFields out;

 protected:
  void on_string(const std::string& path, const std::string& v) override {
    if (path == "model" && out.model.empty()) out.model = v.substr(0, kMaxModelBytes);
  }
  void on_number(const std::string& path, uint64_t v) override {
    if (path == "max_tokens" || path == "max_completion_tokens" || path == "parameters.max_new_tokens") out.max_tokens = v;
  }
};

class ResponseWalker : public PathWalker {
 public:
  ResponseFields out;

 protected:
  void on_string(const std::string& path, const std::string& v) override {
    if (path == "model" && out.model.empty()) out.model = v.substr(0, kMaxModelBytes);
    if (v.empty()) return;
    if (path == "choices.[].text" || path == "choices.[].delta.content") choice_has_content_ = true;
    if (path == "token.text") ++out.content_choices;
  }
  void on_number(const std::string& path, uint64_t v) override {
    if (path == "usage.prompt_tokens") out.prompt_tokens = v;
    else if (path == "usage.completion_tokens" || path == "details.generated_tokens") out.completion_tokens = v;
  }
  void on_element_end(const std::string& array) override {
    if (array != "choices") return;
    out.content_choices += choice_has_content_;
    choice_has_content_ = false;
  }

 private:
  bool choice_has_content_ = false;
};

}  // namespace llm_payload_detail

RequestFields read_request_fields(std::string_view body, bool cut) {
  llm_payload_detail::RequestWalker w;
  llm_payload_detail::walk(body, cut, w);
  return w.out;
}

ResponseFields read_response_fields(std::string_view payload, bool cut) {
  llm_payload_detail::ResponseWalker w;
  llm_payload_detail::walk(payload, cut, w);
  return w.out;
}

}  // namespace causeway::requests
