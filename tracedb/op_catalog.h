// The fixed part of the `ops` dictionary: every op the BPF side can emit (ids from
// bpf/events.h) with its source, kind and the meaning of the generic args a0..a5.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace causeway {

// What an op does, for the diagnosis (analysis/op_classes.h derives its op classes from it).
enum class OpFamily : uint8_t {
  sync,        // waits for the GPU: stream/device/event/context synchronize
  launch,      // puts a kernel on a GPU queue
  copy,        // memcpy; `blocking` when the host waits for it (the synchronous variants)
  memset,      // puts a memset on a GPU queue
  alloc,       // device memory alloc/free (the driver, when the caching allocator misses)
  host_alloc,  // pinned host memory
  collective,  // NCCL collective with (comm, seq): grouped across ranks
  p2p,         // NCCL send/recv
  graph,       // CUDA graph launch
  setup,       // NCCL communicator init/destroy
  group,       // ncclGroupStart/End: brackets, not work
  host,        // host events: scheduler, process lifecycle, block I/O, TCP, memory
};

struct OpInfo {
  uint16_t id;
  uint8_t source;          // enum cw_source
  std::string_view name;
  bool is_call;            // has a duration (else a point event)
  std::string_view arg_names;
  OpFamily family = OpFamily::host;
  bool blocking = false;   // the calling thread waits for the GPU work to finish
};

inline constexpr uint16_t kMaxOpId = 1024;  // op ids are below this (bpf/events.h)

std::span<const OpInfo> op_catalog();
const OpInfo* find_op(uint16_t id);
const OpInfo* find_op(std::string_view name);

// The `ops.family` text of a family (schemas/trace.sql migration 4).
std::string_view family_name(OpFamily f);

// "cuda", "driver", "nccl", "host", "io", "net", "mem"; "unknown" otherwise.
std::string_view source_name(uint8_t source);
std::optional<uint8_t> source_from_name(std::string_view name);

}  // namespace causeway
