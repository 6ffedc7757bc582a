#include "common/json_exact.h"

#include <array>
#include <cstdio>
#include <ctime>
#include <string_view>

namespace causeway {

namespace {

// Members that hold Unix-nanosecond instants (durations such as lost_ns or clock_offset_ns
// are small and stay numbers alone).
constexpr std::array<std::string_view, 9> kInstantKeys = {"ts_ns",      "from_ns",    "to_ns",   "start_ns",   "started_ns",
                                                          "stopped_ns", "first_ns",   "last_ns", "read_end_ns"};

bool is_instant_key(std::string_view key) {
  for (auto k : kInstantKeys)
    if (k == key) return true;
  return false;
}

}  // namespace

std::string format_utc_ns(int64_t unix_ns) {
  // Floor division, so an instant before 1970 still has a fraction in [0, 1e9).
  int64_t secs = unix_ns / 1000000000, frac = unix_ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(frac));
  return buf;
}

void add_utc_twins(nlohmann::json& doc) {
  if (doc.is_array()) {
    for (auto& v : doc) add_utc_twins(v);
    return;
  }
  if (!doc.is_object()) return;
  nlohmann::json twins = nlohmann::json::object();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.value().is_structured()) {
      add_utc_twins(it.value());
      continue;
    }
    if (!it.value().is_number_integer() || !is_instant_key(it.key())) continue;
    const std::string twin = it.key().substr(0, it.key().size() - 3) + "_utc";
    if (!doc.contains(twin)) twins[twin] = format_utc_ns(it.value().get<int64_t>());
  }
  for (auto& [k, v] : twins.items()) doc[k] = std::move(v);
}

}  // namespace causeway
