#include "fleet/fleet_query.h"

#include <cstdlib>

namespace causeway::fleet {

bool is_null(const std::string& s) { return s == "\\N"; }
int64_t to_i64(const std::string& s) { return is_null(s) ? 0 : std::strtoll(s.c_str(), nullptr, 10); }
double to_f64(const std::string& s) { return is_null(s) ? 0 : std::strtod(s.c_str(), nullptr); }

Result<FleetWindow> fleet_window(ClickHouse& ch, std::optional<int64_t> since_ns) {
  auto rows = ch.select("SELECT min(ts_ns), max(ts_ns), count() FROM " + ch.table("events"), {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
  if (!rows) return rows.error();
  if (rows->empty() || rows->front().size() < 3 || to_i64(rows->front()[2]) == 0)
    return make_error("no_data", "the fleet store at " + ch.endpoint().url + " holds no events yet: run causeway ship on the hosts");
  FleetWindow w{to_i64(rows->front()[0]), to_i64(rows->front()[1])};
  if (since_ns) w.from_ns = std::max(w.from_ns, w.to_ns - *since_ns);
  return w;
}

}  // namespace causeway::fleet
