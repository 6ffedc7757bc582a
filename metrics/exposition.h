// Prometheus text exposition format 0.0.4 of a metrics snapshot: HELP and TYPE once per
// family, label values escaped, histograms as cumulative _bucket{le} series ending in +Inf
// plus _sum (seconds) and _count.
#pragma once

#include <string>

#include "metrics/registry.h"

namespace causeway {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_prometheus(const MetricsSnapshot& s);

// Label value escaping of the format: backslash, double quote and newline.
std::string escape_label_value(const std::string& v);

}  // namespace causeway
