// Parsing and printing of the units users type and read: durations ("500ms", "30s",
// "5m", "2h") and sizes ("500m", "10g", "0" = unlimited).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway {

// Accepts an integer or decimal followed by ns, us, ms, s, m, h or d; a bare number is seconds.
Result<int64_t> parse_duration_ns(std::string_view text);

// Accepts a number with an optional k, m, g or t suffix (powers of 1024, optional trailing
// "b"/"ib"); "0" means unlimited and parses to 0.
Result<int64_t> parse_size_bytes(std::string_view text);

// Compact human duration from nanoseconds: "812ns", "14.2us", "3.81ms", "2.50s", "4m12s".
std::string format_duration_ns(int64_t ns);

// Compact byte count: "512B", "12.0KiB", "3.4MiB", "1.20GiB".
std::string format_bytes(int64_t bytes);

// ISO-8601 UTC with milliseconds from Unix nanoseconds: "2026-11-21T10:04:05.123Z".
std::string format_utc(int64_t unix_ns);

}  // namespace causeway
