// The one op table: every op the BPF side can emit (ids from bpf/events.h) with its source,
// family, the meaning of the generic args a0..a5 and, for a probed call, which symbols are
// probed and how their arguments are copied. The probe list and its BPF cookies
// (collector/probe_table.h), the `ops` rows with their family (the SQL views), the diagnosis's
// op classes (the predicates below) and the typed views of the args (tracedb/op_args.h) all
// derive from it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace causeway {

// What an op does, for the diagnosis and the views.
enum class OpFamily : uint8_t {
  sync,         // waits for the GPU: stream/device/event/context synchronize
  launch,       // puts a kernel on a GPU queue
  copy,         // memcpy; `blocking` when the host waits for it (the synchronous variants)
  memset,       // puts a memset on a GPU queue
  alloc,        // device memory alloc/free (the driver, when the caching allocator misses)
  host_alloc,   // pinned host memory
  collective,   // NCCL collective with (comm, seq): grouped across ranks
  p2p,          // NCCL send/recv
  graph,        // CUDA graph launch: puts a whole graph on a GPU queue
  graph_build,  // CUDA graph capture, instantiation, exec destroy: host-side work, nothing queued
  setup,        // NCCL communicator init/destroy
  group,        // ncclGroupStart/End: brackets, not work
  host,         // host events: scheduler, process lifecycle, block I/O, TCP, memory
};

// How a probed call's arguments reach the BPF side: the fields of its attach cookie
// (bpf/events.h), as plain integers. An op of source cuda / driver / nccl is probed in
// libcudart / libcuda / libnccl under each of `symbols` (none given: its name).
struct ProbeInfo {
  std::array<std::string_view, 2> symbols{};
  uint8_t dclass = 0;      // enum cw_decode
  uint8_t aux = 0;         // CW_AUX_COPY_KIND_MASK bits: copy kind; CW_AUX_STREAM: takes a stream
  uint8_t nstack = 0;      // stack words copied at entry (0..4)
  uint8_t struct_reg = 0;  // register holding a pointer to a 40-byte config struct to copy
  uint8_t comm_loc = 0;    // NCCL comm: 1..6 register, 7/8 first/second stack word
  uint8_t nccl_role = 0;   // enum cw_nccl_role
  uint8_t out_reg = 0;     // register holding an out pointer read on success (1..6); 0 none
};

struct OpInfo {
  uint16_t id;
  uint8_t source;          // enum cw_source
  std::string_view name;
  bool is_call;            // has a duration (else a point event)
  std::string_view arg_names;
  OpFamily family = OpFamily::host;
  bool blocking = false;   // the calling thread waits for the GPU work to finish
  ProbeInfo probe{};
};

inline constexpr uint16_t kMaxOpId = 1024;  // op ids are below this (bpf/events.h)

std::span<const OpInfo> op_catalog();
const OpInfo* find_op(uint16_t id);
const OpInfo* find_op(std::string_view name);

// The `ops.family` text of a family (schemas/trace.sql migrations 4 and 6).
std::string_view family_name(OpFamily f);

// "cuda", "driver", "nccl", "host", "io", "net", "mem"; "unknown" otherwise.
std::string_view source_name(uint8_t source);
std::optional<uint8_t> source_from_name(std::string_view name);

// The op's name; "op<N>" for an id the table does not know.
std::string op_name(uint16_t op);
// The source name of an op ("cuda", "driver", …; "unknown"): a timeline item's layer.
const char* op_layer(uint16_t op);

// Op classes the diagnosis uses, from the family and `blocking` of each op.
bool is_gpu_wait_op(uint16_t op);      // stream/device/event/context syncs and synchronous copies
bool is_sync_copy_op(uint16_t op);     // synchronous memcpy variants
bool is_submit_op(uint16_t op);        // puts work on a GPU queue (launches, graph launches, copies, memsets);
                                       // graph capture and instantiation do not: host-side work
bool is_launch_op(uint16_t op);        // kernel launches (not copies, memsets or graph launches)
bool is_device_alloc_op(uint16_t op);  // cudaMalloc/cudaFree and driver equivalents
bool is_collective_op(uint16_t op);    // NCCL collectives with (comm, seq)
bool is_traced_call_op(uint16_t op);   // CUDA runtime, driver, NCCL calls (not group brackets)

// How many of the args a0..a5 the diagnosis reads for an op (decoding a column costs; most rows
// are launches, which need only the kernel).
int args_needed(uint16_t op);

}  // namespace causeway
