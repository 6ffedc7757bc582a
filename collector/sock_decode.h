// Socket records of bpf/sock.bpf.h → requests::SockRecord (the HTTP reassembly's input).
#pragma once

#include <cstddef>
#include <optional>

#include "requests/record.h"

namespace causeway::collector {

// data/size: one CW_REC_SOCK record as read from the ring (88 bytes + its copy). The
// record's data view points into `data`: valid while the ring's record is. Times stay
// monotonic (the caller adds the session's offset). nullopt: malformed.
std::optional<requests::SockRecord> decode_sock(const void* data, size_t size);

}  // namespace causeway::collector
