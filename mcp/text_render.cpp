#include "mcp/text_render.h"

#include "common/sanitize.h"
#include "common/units.h"

namespace causeway::mcp {

std::string data_text(std::string_view untrusted, size_t max_bytes) {
  std::string clean = sanitize_untrusted(untrusted, max_bytes);
  std::string out = "«";
  for (size_t i = 0; i < clean.size(); ++i) {
    // « is C2 AB, » is C2 BB in UTF-8.
    if (static_cast<unsigned char>(clean[i]) == 0xC2 && i + 1 < clean.size() &&
        (static_cast<unsigned char>(clean[i + 1]) == 0xAB || static_cast<unsigned char>(clean[i + 1]) == 0xBB)) {
      out += "\"";
      ++i;
      continue;
    }
    out += clean[i];
  }
  return out + "»";
}

std::string us_text(double us) { return format_duration_ns(static_cast<int64_t>(us * 1000.0 + 0.5)); }

void TextBuilder::line(const std::string& text) {
  if (cut_ > 0 || out_.size() + text.size() + 1 > max_) {
    ++cut_;
    return;
  }
  out_ += text;
  out_ += '\n';
}

std::string TextBuilder::str() const {
  if (cut_ == 0) return out_;
  return out_ + "… " + std::to_string(cut_) + " more lines cut (response budget); narrow the query for the rest\n";
}

bool fit_json_budget(nlohmann::json& doc, const std::string& array_key, size_t max_bytes) {
  auto size_of = [](const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size(); };
  if (!doc.contains(array_key) || !doc[array_key].is_array()) return false;
  auto& arr = doc[array_key];
  size_t total = size_of(doc);
  if (total <= max_bytes) return false;
  // Remove from the end, subtracting each element's size (+1 for the comma) instead of
  // re-serializing the whole document per element.
  while (!arr.empty() && total > max_bytes) {
    total -= size_of(arr.back()) + 1;
    arr.erase(arr.size() - 1);
  }
  doc["truncated"] = true;
  return true;
}

}  // namespace causeway::mcp
