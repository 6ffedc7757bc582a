// JSON that every parser reads exactly, JavaScript's included (docs/INTERFACES.md "Exact numbers").
// A JSON number is an IEEE-754 double to JavaScript (and to jq 1.6), so an integer beyond
// ±(2^53 − 1) arrives rounded: a Unix-nanosecond timestamp (~1.8e18) moves by up to 256 ns and
// a 64-bit stack hash names another stack. RFC 7493 (I-JSON) §2.2 says to send such values as
// strings; we do that for identifiers (always strings) and SQL cells (below), and keep the
// documented `*_ns` timestamps as numbers with an exact ISO-8601 twin beside each.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace causeway {

// The largest integer a double holds exactly and every smaller one too (Number.MAX_SAFE_INTEGER).
inline constexpr int64_t kMaxExactJsonInteger = (int64_t{1} << 53) - 1;

inline bool exact_in_double(int64_t v) { return v >= -kMaxExactJsonInteger && v <= kMaxExactJsonInteger; }

// An identifier as JSON: its decimal digits as a string, whatever its size, so its type never
// depends on its value.
inline nlohmann::json id_json(int64_t id) { return std::to_string(id); }

// ISO-8601 UTC with nanoseconds, exact: "2026-11-21T10:04:05.123456789Z".
std::string format_utc_ns(int64_t unix_ns);

// For every object member that is a Unix-nanosecond timestamp (ts_ns, from_ns, to_ns, start_ns,
// started_ns, stopped_ns, first_ns, last_ns, read_end_ns) holding an integer, adds "<stem>_utc": the same
// instant as ISO-8601 UTC with all nine fraction digits ("2026-11-21T10:04:05.123456789Z"),
// exact where the number is not. Walks nested objects and arrays; an existing twin is kept.
void add_utc_twins(nlohmann::json& doc);

}  // namespace causeway
