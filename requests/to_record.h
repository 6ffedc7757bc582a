// A reassembled request as the trace DB stores it: TTFT, E2E and the token gaps computed
// once, by the definitions of docs/INTERFACES.md "Inference requests".
#pragma once

#include "requests/record.h"
#include "tracedb/records.h"

namespace causeway::requests {

RequestRecord to_record(const Request& r);

}  // namespace causeway::requests
