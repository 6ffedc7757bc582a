// The request families in the text exposition format (docs/METRICS.md "Requests"): the GenAI
// server histograms with the conventions' buckets, the request counters, the time lost per
// cause and the label-cap overflow counter. Part of render_prometheus (metrics/exposition.h).
#pragma once

#include <string>

#include "metrics/request_families.h"

namespace causeway {

void render_request_families(std::string& out, const RequestFamiliesSnapshot& s);

}  // namespace causeway
