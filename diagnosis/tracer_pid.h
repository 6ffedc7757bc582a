// The tracer's own pid in a session (the collector_stats row kTracerPidCounter): its threads share the
// traced CPUs, so they show up in who ran on a victim's CPU; a cause never names them as the
// culprit, it reports their time as tracer overhead (docs/DIAGNOSIS.md "The tracer is never a
// culprit").
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace causeway {

// The collector_stats row the collector stores its own pid under (collector/session_write.cpp update_counters).
inline constexpr std::string_view kTracerPidCounter = "tracer_pid";

// nullopt when the session does not say (a demo, an import, a DB from an older collector).
std::optional<uint32_t> read_tracer_pid(sqlite3* db, int64_t session_id);

}  // namespace causeway
