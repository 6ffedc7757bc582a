#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace causeway {
namespace {

// Splits "12.5ms" into 12.5 and "ms"; fails on an empty or non-numeric prefix.
bool split_number(std::string_view text, double& number, std::string& suffix) {
  size_t i = 0;
  bool digits = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    digits |= std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    ++i;
  }
  if (!digits) return false;
  std::string num(text.substr(0, i));
  char* end = nullptr;
  number = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size()) return false;
  suffix.clear();
  for (char c : text.substr(i)) suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return true;
}

}  // namespace

Result<int64_t> parse_duration_ns(std::string_view text) {
  double n = 0;
  std::string unit;
  if (!split_number(text, n, unit))
    return make_error("usage", "invalid duration '" + std::string(text) + "': use e.g. 500ms, 30s, 5m, 2h");
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s" || unit.empty()) scale = 1e9;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else if (unit == "d") scale = 86400e9;
  else
    return make_error("usage", "invalid duration unit '" + unit + "' in '" + std::string(text) +
                                   "': use ns, us, ms, s, m, h or d");
  double ns = n * scale;
  if (!(ns < 9.2e18)) return make_error("usage", "duration '" + std::string(text) + "' is too large");
  return static_cast<int64_t>(std::llround(ns));
}

Result<int64_t> parse_size_bytes(std::string_view text) {
  double n = 0;
  std::string unit;
  if (!split_number(text, n, unit))
    return make_error("usage", "invalid size '" + std::string(text) + "': use e.g. 500m, 10g, or 0 for unlimited");
  if (unit.size() > 1 && (unit.back() == 'b')) unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'i') unit.pop_back();
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k") scale = 1024.0;
  else if (unit == "m") scale = 1024.0 * 1024;
  else if (unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return make_error("usage", "invalid size unit in '" + std::string(text) + "': use k, m, g or t");
  double bytes = n * scale;
  if (!(bytes < 9.2e18)) return make_error("usage", "size '" + std::string(text) + "' is too large");
  return static_cast<int64_t>(std::llround(bytes));
}

std::string format_duration_ns(int64_t ns) {
  char buf[48];
  double v = static_cast<double>(ns);
  double a = std::fabs(v);
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(ns));
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.1fus", v / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.2fms", v / 1e6);
  else if (a < 60e9) std::snprintf(buf, sizeof buf, "%.2fs", v / 1e9);
  else {
    long long s = static_cast<long long>(v / 1e9);
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  }
  return buf;
}

std::string format_bytes(int64_t bytes) {
  char buf[48];
  double v = static_cast<double>(bytes);
  if (bytes < 1024) std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(bytes));
  else if (v < 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.1fKiB", v / 1024);
  else if (v < 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1fMiB", v / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%.2fGiB", v / (1024.0 * 1024 * 1024));
  return buf;
}

std::string format_utc(int64_t unix_ns) {
  std::time_t secs = static_cast<std::time_t>(unix_ns / 1000000000);
  int ms = static_cast<int>((unix_ns % 1000000000) / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // fits any int fields, so the compiler can prove no truncation
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace causeway
