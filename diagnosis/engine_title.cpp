#include "diagnosis/engine_title.h"

#include <algorithm>
#include <vector>

namespace causeway {
namespace {

constexpr size_t kMaxTitle = 128;
constexpr int32_t kMaxRank = 1 << 16;

bool name_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '.';
}

// "TP3" -> {"TP", 3}: upper-case letters, then 1-5 digits.
std::optional<std::pair<std::string_view, int32_t>> rank_token(std::string_view t) {
  size_t letters = 0;
  while (letters < t.size() && t[letters] >= 'A' && t[letters] <= 'Z') ++letters;
  const size_t digits = t.size() - letters;
  if (letters == 0 || digits == 0 || digits > 5) return std::nullopt;
  int32_t n = 0;
  for (char c : t.substr(letters)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n >= kMaxRank) return std::nullopt;
  return std::pair{t.substr(0, letters), n};
}

}  // namespace

std::optional<EngineTitle> parse_engine_title(std::string_view cmdline) {
  // setproctitle pads the old argv area with NULs (spaces here): the title is the first word.
  std::string_view title = cmdline.substr(0, cmdline.find(' '));
  if (title.empty() || title.size() > kMaxTitle) return std::nullopt;
  const size_t sep = title.find("::");
  if (sep == 0 || sep == std::string_view::npos) return std::nullopt;
  const std::string_view prefix = title.substr(0, sep), rest = title.substr(sep + 2);
  if (!std::all_of(prefix.begin(), prefix.end(), name_char)) return std::nullopt;
  // rest: role words, then rank tokens, joined by '_'.
  std::string role;
  std::vector<std::string> kept;  // the group's own ranks (DP, PP, PCP, NP, ...)
  int32_t tp = -1;
  size_t tps = 0;
  for (size_t at = 0; at <= rest.size();) {
    size_t end = std::min(rest.find('_', at), rest.size());
    std::string_view word = rest.substr(at, end - at);
    at = end + 1;
    if (word.empty() || !std::all_of(word.begin(), word.end(), name_char)) return std::nullopt;
    if (auto r = rank_token(word)) {
      if (r->first == "TP") {
        tp = r->second;
        ++tps;
      } else if (r->first != "EP" && r->first != "DCP") {  // EP / DCP ranks differ within a TP group
        kept.emplace_back(word);
      }
    } else if (kept.empty() && tps == 0) {
      role += (role.empty() ? "" : "_") + std::string(word);
    } else {
      return std::nullopt;  // a plain word after the ranks: not a title we know
    }
  }
  if (role.empty() || tps != 1) return std::nullopt;
  std::sort(kept.begin(), kept.end());  // SGLang has put PP after TP, vLLM before
  EngineTitle t{std::string(prefix) + "::" + role, tp};
  for (const std::string& k : kept) t.group += "_" + k;
  return t;
}

}  // namespace causeway
