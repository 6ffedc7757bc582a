#include "fleet/fleet_query.h"

#include <algorithm>
#include <cstdlib>

namespace causeway::fleet {

bool is_null(const std::string& s) { return s == "\\N"; }
int64_t to_i64(const std::string& s) { return is_null(s) ? 0 : std::strtoll(s.c_str(), nullptr, 10); }
double to_f64(const std::string& s) { return is_null(s) ? 0 : std::strtod(s.c_str(), nullptr); }

namespace {

// min, max of one instant column of a table; nullopt when the table is empty.
Result<std::optional<FleetWindow>> instant_span(ClickHouse& ch, const std::string& table, const std::string& column) {
  auto rows = ch.select("SELECT min(" + column + "), max(" + column + "), count() FROM " + ch.table(table),
                        {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
  if (!rows) return rows.error();
  if (rows->empty() || rows->front().size() < 3 || to_i64(rows->front()[2]) == 0) return std::optional<FleetWindow>{};
  return std::optional<FleetWindow>{FleetWindow{to_i64(rows->front()[0]), to_i64(rows->front()[1])}};
}

FleetWindow counted_back(FleetWindow w, std::optional<int64_t> since_ns) {
  if (since_ns) w.from_ns = std::max(w.from_ns, w.to_ns - *since_ns);
  return w;
}

}  // namespace

Result<FleetWindow> fleet_window(ClickHouse& ch, std::optional<int64_t> since_ns) {
  auto events = instant_span(ch, "events", "ts_ns");
  if (!events) return events.error();
  if (!*events)
    return make_error("no_data", "the fleet store at " + ch.endpoint().url + " holds no events yet: run causeway ship on the hosts");
  return counted_back(**events, since_ns);
}

Result<FleetWindow> fleet_request_window(ClickHouse& ch, std::optional<int64_t> since_ns) {
  auto events = instant_span(ch, "events", "ts_ns");
  if (!events) return events.error();
  auto requests = instant_span(ch, "requests", "start_ns");
  if (!requests) return requests.error();
  if (!*events && !*requests)
    return make_error("no_data", "the fleet store at " + ch.endpoint().url + " holds no events or requests yet: run causeway ship on the hosts");
  if (!*events) return counted_back(**requests, since_ns);
  FleetWindow w = **events;
  if (*requests) w = {std::min(w.from_ns, (*requests)->from_ns), std::max(w.to_ns, (*requests)->to_ns)};
  return counted_back(w, since_ns);
}

}  // namespace causeway::fleet
