// The host a live session runs on (docs/TRACEDB.md "System identity"): hostname, kernel,
// online CPUs and model, memory, boot id, the realtime-monotonic clock offset, and the GPUs.
// GPUs come from NVML (dlopen'ed, no link-time dependency) when the driver is there, else
// from /proc/driver/nvidia/gpus/*/information, else none, with `driver: null` and the reason.
#pragma once

#include <nlohmann/json.hpp>

#include "tracedb/records.h"

namespace causeway::collector {

// The `system` JSON document (stats --json shape; see docs/TRACEDB.md).
nlohmann::json read_system_identity();

// Fills host, kernel, gpus, driver_version, system, boot_id and clock_offset_ns.
void fill_system_identity(SessionInfo& info);

}  // namespace causeway::collector
