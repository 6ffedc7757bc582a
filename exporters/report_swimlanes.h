// A chain's swimlanes as SVG (docs/REPORT.md "Swimlanes"): one row per lane of
// report_lanes.h on a shared time axis in ms from the worst call's start, the worst call
// shaded across every lane. Segments narrower than half a pixel merge with a neighbour of the
// same kind, so the drawing's size follows its width, not the number of events.
#pragma once

#include <string>

#include "exporters/report_lanes.h"

namespace causeway {

// The <figure> holding the SVG and its legend (HTML).
std::string render_swimlanes(const SwimlaneData& data);

}  // namespace causeway
