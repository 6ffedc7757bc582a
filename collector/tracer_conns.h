// The map of every causeway tracer's /metrics scrape connections on the host (bpf/sock.bpf.h
// tracer_conns, docs/INFERENCE.md "Kernel side"): each tracer's own_conns is its own,
// so without a shared map a second tracer of the same server (a fleet agent beside a
// hand-run trace, two test runs at once) stored the first one's scrapes as user requests.
// The first tracer's map is found by the next ones through the kernel's map ids (no bpffs
// needed, nothing left behind: the map lives while a tracer holds it).
#pragma once

#include <cstdint>
#include <string>

struct bpf_map;

namespace causeway::collector {

// How long an entry holds after it is written: longer than a scrape (at most 1 s) and the
// scraper's linger of an unanswered one (10 s), so a tracer killed before it removed its
// entries leaves none that holds for long (collector/engine_scraper.cpp kOwnLinger).
inline constexpr int64_t kTracerConnHoldNs = 30'000'000'000;

// Before the object is loaded: `map` becomes the map of the same name and shape that a
// running tracer loaded (the oldest of them, when two started at once and each made its
// own). Returns whether it did; `why_not` says why when one was found but could not be used.
bool share_tracer_conns(bpf_map* map, std::string& why_not);

}  // namespace causeway::collector
