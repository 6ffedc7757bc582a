#include "collector/proc_maps.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace causeway::collector {
namespace {

bool parse_hex(std::string_view s, uint64_t& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string_view next_field(std::string_view& line) {
  size_t i = line.find_first_not_of(' ');
  if (i == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(i);
  size_t j = line.find(' ');
  std::string_view f = line.substr(0, j);
  line.remove_prefix(j == std::string_view::npos ? line.size() : j);
  return f;
}

}  // namespace

std::vector<Mapping> parse_maps(std::string_view text) {
  std::vector<Mapping> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // start-end perms offset major:minor inode [path]
    std::string_view range = next_field(line), perms = next_field(line), off = next_field(line),
                     dev = next_field(line), ino = next_field(line);
    if (ino.empty()) continue;
    Mapping m;
    size_t dash = range.find('-'), colon = dev.find(':');
    uint64_t maj = 0, min = 0;
    if (dash == std::string_view::npos || colon == std::string_view::npos || !parse_hex(range.substr(0, dash), m.start) ||
        !parse_hex(range.substr(dash + 1), m.end) || !parse_hex(off, m.offset) || !parse_hex(dev.substr(0, colon), maj) ||
        !parse_hex(dev.substr(colon + 1), min))
      continue;
    auto r = std::from_chars(ino.data(), ino.data() + ino.size(), m.inode);
    if (r.ec != std::errc()) continue;
    m.dev_major = static_cast<uint32_t>(maj);
    m.dev_minor = static_cast<uint32_t>(min);
    m.exec = perms.size() >= 3 && perms[2] == 'x';
    size_t p = line.find_first_not_of(' ');
    if (p != std::string_view::npos) m.path = std::string(line.substr(p));
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Mapping> read_maps(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_maps(ss.str());
}

const Mapping* find_mapping(const std::vector<Mapping>& maps, uint64_t addr) {
  auto it = std::upper_bound(maps.begin(), maps.end(), addr, [](uint64_t a, const Mapping& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

std::string_view base_name(std::string_view path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.substr(path.size() - kDeleted.size()) == kDeleted)
    path.remove_suffix(kDeleted.size());
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace causeway::collector
