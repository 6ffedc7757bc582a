#include "mcp/text_render.h"

#include <algorithm>
#include <cctype>

#include "common/json_exact.h"
#include "common/sanitize.h"
#include "common/units.h"

namespace causeway::mcp {

namespace {

// « and » inside sanitized text become '"', so only our fences use them.
std::string unfence(std::string s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) == 0xC2 && i + 1 < s.size() &&
        (static_cast<unsigned char>(s[i + 1]) == 0xAB || static_cast<unsigned char>(s[i + 1]) == 0xBB)) {
      out += '"';
      ++i;
      continue;
    }
    out += s[i];
  }
  return out;
}

void collect_traced(const nlohmann::json& doc, std::vector<std::string>& out) {
  static const char* const kKeys[] = {"comm", "cmdline", "cgroup", "container", "host", "path", "file", "function", "module"};
  if (doc.is_array()) {
    for (const auto& v : doc) collect_traced(v, out);
    return;
  }
  if (!doc.is_object()) return;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.value().is_string()) {
      for (const char* k : kKeys)
        if (it.key() == k) out.push_back(it.value().get<std::string>());
    } else if (it.key() == "stack" && it.value().is_array()) {
      for (const auto& f : it.value())
        if (f.is_string()) out.push_back(f.get<std::string>());
    } else {
      collect_traced(it.value(), out);
    }
  }
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string data_text(std::string_view untrusted, size_t max_bytes) {
  return "«" + unfence(sanitize_untrusted(untrusted, max_bytes)) + "»";
}

std::vector<std::string> traced_strings(const nlohmann::json& doc) {
  std::vector<std::string> out;
  collect_traced(doc, out);
  return out;
}

std::string own_text(std::string_view text, const std::vector<std::string>& traced, size_t max_bytes) {
  const std::string clean = unfence(sanitize_untrusted(text, max_bytes));
  // Longest first, so "python3 train.py" is fenced whole rather than as "python3".
  std::vector<std::string> needles;
  for (const auto& t : traced) {
    std::string n = unfence(sanitize_untrusted(t, max_bytes));
    if (n.size() >= 2) needles.push_back(std::move(n));
  }
  std::sort(needles.begin(), needles.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  needles.erase(std::unique(needles.begin(), needles.end()), needles.end());
  std::string out;
  for (size_t i = 0; i < clean.size();) {
    const std::string* hit = nullptr;
    // Whole words only: the culprit "tar" is not fenced inside "start".
    const bool starts_word = i == 0 || !word_char(clean[i - 1]);
    for (const auto& n : needles)
      if (starts_word && clean.compare(i, n.size(), n) == 0 &&
          (i + n.size() == clean.size() || !word_char(clean[i + n.size()]) || !word_char(n.back()))) {
        hit = &n;
        break;
      }
    if (hit) {
      out += "«" + *hit + "»";
      i += hit->size();
    } else {
      out += clean[i++];
    }
  }
  return out;
}

std::string us_text(double us) { return format_duration_ns(static_cast<int64_t>(us * 1000.0 + 0.5)); }

size_t json_string_bytes(std::string_view text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size() - 2;
}

namespace {
// Room kept for the "… N more lines cut" line and the footer.
constexpr size_t kCutLineBytes = 120;
constexpr size_t kFooterBytes = 400;
}  // namespace

void TextBuilder::line(const std::string& text) {
  const size_t bytes = json_string_bytes(text) + 2;  // "\n"
  if (cut_ > 0 || used_ + bytes + kCutLineBytes + kFooterBytes > max_) {
    ++cut_;
    return;
  }
  out_ += text;
  out_ += '\n';
  used_ += bytes;
}

void TextBuilder::footer(const std::string& text) {
  footer_ = text.substr(0, kFooterBytes / 2);  // escapes may double it
  footer_ += '\n';
}

std::string TextBuilder::str() const {
  if (cut_ == 0) return out_ + footer_;
  return out_ + "… " + std::to_string(cut_) + " more lines cut (response budget); narrow the query for the rest\n" + footer_;
}

size_t fit_json_budget(nlohmann::json& doc, const std::string& array_key, size_t max_bytes) {
  auto size_of = [](const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size(); };
  add_utc_twins(doc);
  if (!doc.contains(array_key) || !doc[array_key].is_array()) return 0;
  auto& arr = doc[array_key];
  // Room for the "truncated" and "next_cursor" members a cut adds.
  constexpr size_t kCutMembers = 64;
  size_t total = size_of(doc);
  if (total <= max_bytes) return 0;
  // Remove from the end, subtracting each element's size (+1 for the comma) instead of
  // re-serializing the whole document per element.
  size_t dropped = 0;
  while (!arr.empty() && total + kCutMembers > max_bytes) {
    total -= size_of(arr.back()) + 1;
    arr.erase(arr.size() - 1);
    ++dropped;
  }
  doc["truncated"] = true;
  return dropped;
}

void fit_page(nlohmann::json& doc, const std::string& array_key, size_t max_bytes, size_t offset, bool more_follow) {
  doc.erase("next_cursor");
  const size_t dropped = fit_json_budget(doc, array_key, max_bytes);
  if (dropped == 0 && !more_follow) return;
  doc["truncated"] = true;
  doc["next_cursor"] = "o:" + std::to_string(offset + doc[array_key].size());
}

}  // namespace causeway::mcp
