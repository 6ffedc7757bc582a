#include "common/untrusted_json.h"

#include <string>

#include "common/sanitize.h"

namespace causeway {
namespace {

using nlohmann::json;

// A SAX handler that builds nothing: it only tracks nesting, and returning false from a
// start event makes nlohmann stop parsing at once.
class DepthGauge {
 public:
  explicit DepthGauge(size_t max_depth) : max_depth_(max_depth) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(size_t) { return enter(); }
  bool key(json::string_t&) { return true; }
  bool end_object() { return leave(); }
  bool start_array(size_t) { return enter(); }
  bool end_array() { return leave(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) {
    malformed_ = true;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  bool malformed() const { return malformed_; }

 private:
  bool enter() {
    if (++depth_ > max_depth_) {
      too_deep_ = true;
      return false;
    }
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }

  size_t max_depth_;
  size_t depth_ = 0;
  bool too_deep_ = false;
  bool malformed_ = false;
};

}  // namespace

Result<json> parse_untrusted_json(std::string_view text, JsonLimits limits) {
  if (text.size() > limits.max_bytes)
    return make_error("json_too_large", "JSON document of " + std::to_string(text.size()) + " bytes; the limit is " +
                                            std::to_string(limits.max_bytes));
  DepthGauge gauge(limits.max_depth);
  const bool ok = json::sax_parse(text.begin(), text.end(), &gauge, json::input_format_t::json, /*strict=*/true);
  if (gauge.too_deep())
    return make_error("json_too_deep", "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels");
  if (!ok || gauge.malformed()) return make_error("json_invalid", "not valid JSON");
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("json_invalid", "not valid JSON");
  return doc;
}

json parse_untrusted_json_or_null(std::string_view text, JsonLimits limits) {
  if (text.empty()) return nullptr;
  auto doc = parse_untrusted_json(text, limits);
  return doc ? std::move(*doc) : json(nullptr);
}

json sanitize_json_strings(json doc, size_t max_bytes) {
  if (doc.is_string()) return sanitize_untrusted(doc.get_ref<const std::string&>(), max_bytes);
  if (doc.is_array()) {
    for (auto& v : doc) v = sanitize_json_strings(std::move(v), max_bytes);
    return doc;
  }
  if (!doc.is_object()) return doc;
  json out = json::object();
  for (auto& [key, value] : doc.items()) out[sanitize_untrusted(key, max_bytes)] = sanitize_json_strings(std::move(value), max_bytes);
  return out;
}

}  // namespace causeway
