#include "tracedb/op_catalog.h"

#include <array>

#include "bpf/events.h"
#include "tracedb/op_args.h"
#include "tracedb/op_recording.h"

namespace causeway {
namespace {

// Arg layouts (tracedb/op_args.h; see schema_docs for the views that decode them):
using namespace arg_layout;
constexpr std::string_view kAlloc = alloc;
constexpr std::string_view kFree = free_;
constexpr std::string_view kCopy = copy;
constexpr std::string_view kSet = arg_layout::memset;
constexpr std::string_view kLaunch = launch;
constexpr std::string_view kStream = stream;
constexpr std::string_view kColl = coll;
constexpr std::string_view kCaptureBegin = capture_begin;
constexpr std::string_view kCaptureEnd = capture_end;
constexpr std::string_view kInstantiate = instantiate;
constexpr std::string_view kGraphLaunch = graph_launch;
constexpr std::string_view kGraphExec = graph_exec;

using F = OpFamily;
constexpr uint8_t S = CW_AUX_STREAM;
// Driver copies carry their direction in the aux byte: 1 HtoD, 2 DtoH, 3 DtoD, 4 default.
constexpr uint8_t kHtoD = 1, kDtoH = 2, kDtoD = 3, kDefault = 4;

constexpr ProbeInfo kAllocProbe{.dclass = CW_DC_ALLOC, .out_reg = 1};
constexpr ProbeInfo kLaunchRt{.dclass = CW_DC_LAUNCH_RT, .aux = S, .nstack = 2};
constexpr ProbeInfo kStreamArg{.dclass = CW_DC_STREAM0, .aux = S};
constexpr ProbeInfo kCaptureBeginProbe{.dclass = CW_DC_CAPTURE_BEGIN, .aux = S};
constexpr ProbeInfo kCaptureEndProbe{.dclass = CW_DC_CAPTURE_END, .aux = S, .out_reg = 2};
constexpr ProbeInfo kInstantiateProbe{.dclass = CW_DC_GRAPH_INSTANTIATE, .out_reg = 1};
constexpr ProbeInfo nccl_coll(uint8_t dclass, uint8_t nstack, uint8_t comm_loc) {
  return {.dclass = dclass, .aux = S, .nstack = nstack, .comm_loc = comm_loc, .nccl_role = CW_NCCL_COLL};
}
constexpr ProbeInfo drv_copy(uint8_t aux, std::string_view symbol = {}) {
  return {.symbols = {symbol}, .dclass = CW_DC_DRV_COPY, .aux = aux};
}
constexpr ProbeInfo with_symbols(ProbeInfo p, std::string_view a, std::string_view b = {}) {
  p.symbols = {a, b};
  return p;
}

constexpr OpInfo kCatalog[] = {
    // CUDA runtime (libcudart)
    {CW_OP_CUDA_MALLOC, CW_SRC_CUDA, "cudaMalloc", true, kAlloc, F::alloc, false, kAllocProbe},
    {CW_OP_CUDA_MALLOC_MANAGED, CW_SRC_CUDA, "cudaMallocManaged", true, kAlloc, F::alloc, false, kAllocProbe},
    {CW_OP_CUDA_MALLOC_HOST, CW_SRC_CUDA, "cudaMallocHost", true, kAlloc, F::host_alloc, false, kAllocProbe},
    {CW_OP_CUDA_FREE, CW_SRC_CUDA, "cudaFree", true, kFree, F::alloc, false, {.dclass = CW_DC_FREE}},
    {CW_OP_CUDA_MEMCPY, CW_SRC_CUDA, "cudaMemcpy", true, kCopy, F::copy, true, {.dclass = CW_DC_COPY}},
    {CW_OP_CUDA_MEMCPY_ASYNC, CW_SRC_CUDA, "cudaMemcpyAsync", true, kCopy, F::copy, false, {.dclass = CW_DC_COPY, .aux = S}},
    {CW_OP_CUDA_MEMCPY_2D, CW_SRC_CUDA, "cudaMemcpy2D", true, kCopy, F::copy, true, {.dclass = CW_DC_COPY_2D, .nstack = 1}},
    {CW_OP_CUDA_MEMCPY_2D_ASYNC, CW_SRC_CUDA, "cudaMemcpy2DAsync", true, kCopy, F::copy, false,
     {.dclass = CW_DC_COPY_2D, .aux = S, .nstack = 2}},
    {CW_OP_CUDA_MEMCPY_PEER, CW_SRC_CUDA, "cudaMemcpyPeer", true, kCopy, F::copy, true, {.dclass = CW_DC_COPY_PEER}},
    {CW_OP_CUDA_MEMCPY_PEER_ASYNC, CW_SRC_CUDA, "cudaMemcpyPeerAsync", true, kCopy, F::copy, false,
     {.dclass = CW_DC_COPY_PEER, .aux = S}},
    {CW_OP_CUDA_MEMSET, CW_SRC_CUDA, "cudaMemset", true, kSet, F::memset, false, {.dclass = CW_DC_SET}},
    {CW_OP_CUDA_MEMSET_ASYNC, CW_SRC_CUDA, "cudaMemsetAsync", true, kSet, F::memset, false, {.dclass = CW_DC_SET, .aux = S}},
    {CW_OP_CUDA_LAUNCH_KERNEL, CW_SRC_CUDA, "cudaLaunchKernel", true, kLaunch, F::launch, false, kLaunchRt},
    {CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, CW_SRC_CUDA, "__cudaLaunchKernel", true, kLaunch, F::launch, false, kLaunchRt},
    {CW_OP_CUDA_LAUNCH_KERNEL_EXC, CW_SRC_CUDA, "cudaLaunchKernelExC", true, kLaunch, F::launch, false,
     {.dclass = CW_DC_LAUNCH_RT_EXC, .aux = S, .struct_reg = 1}},
    {CW_OP_CUDA_GRAPH_LAUNCH, CW_SRC_CUDA, "cudaGraphLaunch", true, kGraphLaunch, F::graph, false,
     {.dclass = CW_DC_GRAPH_EXEC, .aux = S}},
    {CW_OP_CUDA_STREAM_SYNC, CW_SRC_CUDA, "cudaStreamSynchronize", true, kStream, F::sync, true, kStreamArg},
    {CW_OP_CUDA_DEVICE_SYNC, CW_SRC_CUDA, "cudaDeviceSynchronize", true, "", F::sync, true, {.dclass = CW_DC_NONE}},
    {CW_OP_CUDA_EVENT_SYNC, CW_SRC_CUDA, "cudaEventSynchronize", true, ",event", F::sync, true, {.dclass = CW_DC_EVENT}},
    {CW_OP_CUDA_MEMCPY_ASYNC_PTSZ, CW_SRC_CUDA, "cudaMemcpyAsync_ptsz", true, kCopy, F::copy, false,
     {.dclass = CW_DC_COPY, .aux = S}},
    {CW_OP_CUDA_LAUNCH_KERNEL_PTSZ, CW_SRC_CUDA, "cudaLaunchKernel_ptsz", true, kLaunch, F::launch, false, kLaunchRt},
    {CW_OP_CUDA_MEMSET_ASYNC_PTSZ, CW_SRC_CUDA, "cudaMemsetAsync_ptsz", true, kSet, F::memset, false,
     {.dclass = CW_DC_SET, .aux = S}},
    {CW_OP_CUDA_GRAPH_LAUNCH_PTSZ, CW_SRC_CUDA, "cudaGraphLaunch_ptsz", true, kGraphLaunch, F::graph, false,
     {.dclass = CW_DC_GRAPH_EXEC, .aux = S}},
    {CW_OP_CUDA_STREAM_SYNC_PTSZ, CW_SRC_CUDA, "cudaStreamSynchronize_ptsz", true, kStream, F::sync, true, kStreamArg},
    {CW_OP_CUDA_MEMCPY_PTDS, CW_SRC_CUDA, "cudaMemcpy_ptds", true, kCopy, F::copy, true, {.dclass = CW_DC_COPY}},
    {CW_OP_CUDA_STREAM_BEGIN_CAPTURE, CW_SRC_CUDA, "cudaStreamBeginCapture", true, kCaptureBegin, F::graph_build, false,
     kCaptureBeginProbe},
    {CW_OP_CUDA_STREAM_BEGIN_CAPTURE_PTSZ, CW_SRC_CUDA, "cudaStreamBeginCapture_ptsz", true, kCaptureBegin, F::graph_build,
     false, kCaptureBeginProbe},
    {CW_OP_CUDA_STREAM_END_CAPTURE, CW_SRC_CUDA, "cudaStreamEndCapture", true, kCaptureEnd, F::graph_build, false,
     kCaptureEndProbe},
    {CW_OP_CUDA_STREAM_END_CAPTURE_PTSZ, CW_SRC_CUDA, "cudaStreamEndCapture_ptsz", true, kCaptureEnd, F::graph_build, false,
     kCaptureEndProbe},
    {CW_OP_CUDA_GRAPH_INSTANTIATE, CW_SRC_CUDA, "cudaGraphInstantiate", true, kInstantiate, F::graph_build, false,
     kInstantiateProbe},
    {CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS, CW_SRC_CUDA, "cudaGraphInstantiateWithFlags", true, kInstantiate,
     F::graph_build, false, kInstantiateProbe},
    {CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_PARAMS, CW_SRC_CUDA, "cudaGraphInstantiateWithParams", true, kInstantiate,
     F::graph_build, false, kInstantiateProbe},
    {CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ, CW_SRC_CUDA, "cudaGraphInstantiateWithParams_ptsz", true, kInstantiate,
     F::graph_build, false, kInstantiateProbe},
    {CW_OP_CUDA_GRAPH_EXEC_DESTROY, CW_SRC_CUDA, "cudaGraphExecDestroy", true, kGraphExec, F::graph_build, false,
     {.dclass = CW_DC_GRAPH_EXEC}},

    // CUDA driver (libcuda): the exported symbols are versioned (_v2) and have per-thread
    // default-stream twins (_ptsz); each is one op.
    {CW_OP_CU_LAUNCH_KERNEL, CW_SRC_DRIVER, "cuLaunchKernel", true, kLaunch, F::launch, false,
     {.symbols = {"cuLaunchKernel", "cuLaunchKernel_ptsz"}, .dclass = CW_DC_LAUNCH_DRV, .aux = S, .nstack = 3}},
    {CW_OP_CU_LAUNCH_KERNEL_EX, CW_SRC_DRIVER, "cuLaunchKernelEx", true, kLaunch, F::launch, false,
     {.symbols = {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"}, .dclass = CW_DC_LAUNCH_DRV_EX, .aux = S, .struct_reg = 1}},
    {CW_OP_CU_MEM_ALLOC, CW_SRC_DRIVER, "cuMemAlloc", true, kAlloc, F::alloc, false, with_symbols(kAllocProbe, "cuMemAlloc_v2")},
    {CW_OP_CU_MEM_FREE, CW_SRC_DRIVER, "cuMemFree", true, kFree, F::alloc, false,
     {.symbols = {"cuMemFree_v2"}, .dclass = CW_DC_FREE}},
    {CW_OP_CU_MEM_ALLOC_MANAGED, CW_SRC_DRIVER, "cuMemAllocManaged", true, kAlloc, F::alloc, false, kAllocProbe},
    {CW_OP_CU_MEMCPY, CW_SRC_DRIVER, "cuMemcpy", true, kCopy, F::copy, true, drv_copy(kDefault)},
    {CW_OP_CU_MEMCPY_ASYNC, CW_SRC_DRIVER, "cuMemcpyAsync", true, kCopy, F::copy, false, drv_copy(kDefault | S)},
    {CW_OP_CU_MEMCPY_HTOD, CW_SRC_DRIVER, "cuMemcpyHtoD", true, kCopy, F::copy, true, drv_copy(kHtoD, "cuMemcpyHtoD_v2")},
    {CW_OP_CU_MEMCPY_HTOD_ASYNC, CW_SRC_DRIVER, "cuMemcpyHtoDAsync", true, kCopy, F::copy, false,
     drv_copy(kHtoD | S, "cuMemcpyHtoDAsync_v2")},
    {CW_OP_CU_MEMCPY_DTOH, CW_SRC_DRIVER, "cuMemcpyDtoH", true, kCopy, F::copy, true, drv_copy(kDtoH, "cuMemcpyDtoH_v2")},
    {CW_OP_CU_MEMCPY_DTOH_ASYNC, CW_SRC_DRIVER, "cuMemcpyDtoHAsync", true, kCopy, F::copy, false,
     drv_copy(kDtoH | S, "cuMemcpyDtoHAsync_v2")},
    {CW_OP_CU_MEMCPY_DTOD, CW_SRC_DRIVER, "cuMemcpyDtoD", true, kCopy, F::copy, true, drv_copy(kDtoD, "cuMemcpyDtoD_v2")},
    {CW_OP_CU_MEMCPY_DTOD_ASYNC, CW_SRC_DRIVER, "cuMemcpyDtoDAsync", true, kCopy, F::copy, false,
     drv_copy(kDtoD | S, "cuMemcpyDtoDAsync_v2")},
    {CW_OP_CU_CTX_SYNC, CW_SRC_DRIVER, "cuCtxSynchronize", true, "", F::sync, true, {.dclass = CW_DC_NONE}},
    {CW_OP_CU_STREAM_SYNC, CW_SRC_DRIVER, "cuStreamSynchronize", true, kStream, F::sync, true, kStreamArg},
    {CW_OP_CU_GRAPH_LAUNCH, CW_SRC_DRIVER, "cuGraphLaunch", true, kGraphLaunch, F::graph, false,
     {.symbols = {"cuGraphLaunch", "cuGraphLaunch_ptsz"}, .dclass = CW_DC_GRAPH_EXEC, .aux = S}},
    // The unversioned cuStreamBeginCapture (CUDA 10.0) takes no mode; _v2 is what the
    // runtime and current headers call.
    {CW_OP_CU_STREAM_BEGIN_CAPTURE, CW_SRC_DRIVER, "cuStreamBeginCapture", true, kCaptureBegin, F::graph_build, false,
     with_symbols(kCaptureBeginProbe, "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz")},
    {CW_OP_CU_STREAM_END_CAPTURE, CW_SRC_DRIVER, "cuStreamEndCapture", true, kCaptureEnd, F::graph_build, false,
     with_symbols(kCaptureEndProbe, "cuStreamEndCapture", "cuStreamEndCapture_ptsz")},
    // The exported cuGraphInstantiate(_v2) is the pre-12 form (exec*, graph, error node, log,
    // log size); CUDA 12+ headers map cuGraphInstantiate to cuGraphInstantiateWithFlags. All
    // instantiations share the first two arguments, all the decoding reads.
    {CW_OP_CU_GRAPH_INSTANTIATE, CW_SRC_DRIVER, "cuGraphInstantiate", true, kInstantiate, F::graph_build, false,
     with_symbols(kInstantiateProbe, "cuGraphInstantiate", "cuGraphInstantiate_v2")},
    {CW_OP_CU_GRAPH_INSTANTIATE_WITH_FLAGS, CW_SRC_DRIVER, "cuGraphInstantiateWithFlags", true, kInstantiate,
     F::graph_build, false, kInstantiateProbe},
    {CW_OP_CU_GRAPH_INSTANTIATE_WITH_PARAMS, CW_SRC_DRIVER, "cuGraphInstantiateWithParams", true, kInstantiate,
     F::graph_build, false,
     with_symbols(kInstantiateProbe, "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz")},
    {CW_OP_CU_GRAPH_EXEC_DESTROY, CW_SRC_DRIVER, "cuGraphExecDestroy", true, kGraphExec, F::graph_build, false,
     {.dclass = CW_DC_GRAPH_EXEC}},

    // NCCL (libnccl)
    {CW_OP_NCCL_COMM_INIT_RANK, CW_SRC_NCCL, "ncclCommInitRank", true, ",comm_hash,rank,nranks", F::setup, false,
     {.dclass = CW_DC_NCCL_INIT_RANK, .nccl_role = CW_NCCL_INIT_RANK}},
    {CW_OP_NCCL_COMM_INIT_ALL, CW_SRC_NCCL, "ncclCommInitAll", true, ",,,ndev", F::setup, false,
     {.dclass = CW_DC_NCCL_INIT_ALL, .nccl_role = CW_NCCL_INIT_ALL}},
    {CW_OP_NCCL_COMM_DESTROY, CW_SRC_NCCL, "ncclCommDestroy", true, ",comm_hash,rank,nranks", F::setup, false,
     {.dclass = CW_DC_NCCL_DESTROY, .comm_loc = 1, .nccl_role = CW_NCCL_DESTROY}},
    {CW_OP_NCCL_ALL_REDUCE, CW_SRC_NCCL, "ncclAllReduce", true, kColl, F::collective, false,
     nccl_coll(CW_DC_NCCL_REDUCE_LIKE, 1, 6)},
    {CW_OP_NCCL_ALL_GATHER, CW_SRC_NCCL, "ncclAllGather", true, kColl, F::collective, false,
     nccl_coll(CW_DC_NCCL_ALL_GATHER, 0, 5)},
    {CW_OP_NCCL_REDUCE_SCATTER, CW_SRC_NCCL, "ncclReduceScatter", true, kColl, F::collective, false,
     nccl_coll(CW_DC_NCCL_REDUCE_LIKE, 1, 6)},
    {CW_OP_NCCL_BROADCAST, CW_SRC_NCCL, "ncclBroadcast", true, kColl, F::collective, false,
     nccl_coll(CW_DC_NCCL_BROADCAST, 1, 6)},
    {CW_OP_NCCL_BCAST, CW_SRC_NCCL, "ncclBcast", true, kColl, F::collective, false, nccl_coll(CW_DC_NCCL_BCAST, 0, 5)},
    {CW_OP_NCCL_REDUCE, CW_SRC_NCCL, "ncclReduce", true, kColl, F::collective, false, nccl_coll(CW_DC_NCCL_REDUCE, 2, 7)},
    {CW_OP_NCCL_SEND, CW_SRC_NCCL, "ncclSend", true, kColl, F::p2p, false, nccl_coll(CW_DC_NCCL_P2P, 0, 5)},
    {CW_OP_NCCL_RECV, CW_SRC_NCCL, "ncclRecv", true, kColl, F::p2p, false, nccl_coll(CW_DC_NCCL_P2P, 0, 5)},
    {CW_OP_NCCL_GROUP_START, CW_SRC_NCCL, "ncclGroupStart", true, "", F::group, false, {.dclass = CW_DC_NONE}},
    {CW_OP_NCCL_GROUP_END, CW_SRC_NCCL, "ncclGroupEnd", true, "", F::group, false, {.dclass = CW_DC_NONE}},

    // Host context (tracepoints, no probe)
    {CW_OP_SCHED_SWITCH, CW_SRC_HOST, "sched_switch", false, "", F::host},
    {CW_OP_SCHED_WAKEUP, CW_SRC_HOST, "sched_wakeup", false, "", F::host},
    {CW_OP_PROC_EXEC, CW_SRC_HOST, "process_exec", false, "ppid", F::host},
    {CW_OP_PROC_FORK, CW_SRC_HOST, "process_fork", false, "child_pid", F::host},
    {CW_OP_PROC_EXIT, CW_SRC_HOST, "process_exit", false, "exit_code", F::host},
    // A thread's fast calls counted in the kernel between two recorded calls: ts = the first's start,
    // dur = until the last returned (bpf/events.h run fields; docs/COLLECTOR.md "Aggregated calls").
    {CW_OP_CALLS_AGGREGATED, CW_SRC_HOST, "calls_aggregated", false, arg_layout::calls_aggregated, F::host},
    {CW_OP_BLOCK_RQ, CW_SRC_IO, "block_rq", true, arg_layout::block, F::host},
    {CW_OP_TCP_RETRANSMIT, CW_SRC_NET, "tcp_retransmit", false, tcp, F::host},
    {CW_OP_TCP_RETRANSMIT6, CW_SRC_NET, "tcp_retransmit6", false, tcp6, F::host},
    // A served connection's response waiting on a full send buffer (requests/send_waits.h).
    {CW_OP_SOCK_SEND_WAIT, CW_SRC_NET, "sock_send_wait", true, send_wait, F::host},
    {CW_OP_PAGE_ALLOC, CW_SRC_MEM, "page_alloc", false, page_alloc, F::host},
    {CW_OP_OOM_KILL, CW_SRC_MEM, "oom_kill", false, arg_layout::oom_kill, F::host},
};

constexpr bool is_probed_source(uint8_t source) {
  return source == CW_SRC_CUDA || source == CW_SRC_DRIVER || source == CW_SRC_NCCL;
}

// What the rest of the system assumes of the table, checked at compile time:
//  - ids are unique and below kMaxOpId (the by-id index);
//  - every op of a probed library is a call, every other op has no probe fields;
//  - the source fits the cookie's 4 bits and an out register is an argument register;
//  - collectives and p2p calls have the layout the correlator reads (comm, seq) from: a1/a4.
constexpr bool table_is_consistent() {
  for (size_t i = 0; i < std::size(kCatalog); ++i) {
    const OpInfo& op = kCatalog[i];
    if (op.id >= kMaxOpId || op.source > 0xf || op.probe.out_reg > CW_NREGS) return false;
    for (size_t j = 0; j < i; ++j)
      if (kCatalog[j].id == op.id) return false;
    if (is_probed_source(op.source) && !op.is_call) return false;
    if (!is_probed_source(op.source) && (op.probe.dclass || !op.probe.symbols[0].empty() || op.probe.out_reg)) return false;
    if ((op.family == OpFamily::collective || op.family == OpFamily::p2p) && op.arg_names != kColl) return false;
  }
  return true;
}
static_assert(table_is_consistent(), "the op table breaks an assumption listed above table_is_consistent()");

// The `recording` column (tracedb/op_recording.h): the ops whose fast calls are only counted in the
// kernel; every other op is every_call. Only kernel launches: every sync, copy, memset,
// collective, graph and memory call explains something by itself (docs/COLLECTOR.md
// "Aggregated calls").
constexpr uint16_t kFastCounted[] = {CW_OP_CUDA_LAUNCH_KERNEL,     CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL,
                                     CW_OP_CUDA_LAUNCH_KERNEL_EXC, CW_OP_CUDA_LAUNCH_KERNEL_PTSZ,
                                     CW_OP_CU_LAUNCH_KERNEL,       CW_OP_CU_LAUNCH_KERNEL_EX};
constexpr bool fast_counted_are_launches() {
  for (uint16_t id : kFastCounted) {
    bool found = false;
    for (const OpInfo& op : kCatalog)
      if (op.id == id) found = is_probed_source(op.source) && op.family == OpFamily::launch;
    if (!found) return false;
  }
  return true;
}
static_assert(fast_counted_are_launches(), "only probed kernel launches may be fast_counted");

// O(1) lookup by id: the correlator classifies every event through it.
const std::array<const OpInfo*, kMaxOpId>& by_id() {
  static const auto index = [] {
    std::array<const OpInfo*, kMaxOpId> a{};
    for (const OpInfo& op : kCatalog) a[op.id] = &op;
    return a;
  }();
  return index;
}

}  // namespace

std::span<const OpInfo> op_catalog() { return kCatalog; }

const OpInfo* find_op(uint16_t id) { return id < kMaxOpId ? by_id()[id] : nullptr; }

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : kCatalog)
    if (op.name == name) return &op;
  return nullptr;
}

std::string_view family_name(OpFamily f) {
  switch (f) {
    case OpFamily::sync: return "sync";
    case OpFamily::launch: return "launch";
    case OpFamily::copy: return "copy";
    case OpFamily::memset: return "memset";
    case OpFamily::alloc: return "alloc";
    case OpFamily::host_alloc: return "host_alloc";
    case OpFamily::collective: return "collective";
    case OpFamily::p2p: return "p2p";
    case OpFamily::graph: return "graph";
    case OpFamily::graph_build: return "graph_build";
    case OpFamily::setup: return "setup";
    case OpFamily::group: return "group";
    case OpFamily::host: return "host";
  }
  return "host";
}

std::string_view source_name(uint8_t source) {
  switch (source) {
    case CW_SRC_CUDA: return "cuda";
    case CW_SRC_DRIVER: return "driver";
    case CW_SRC_NCCL: return "nccl";
    case CW_SRC_HOST: return "host";
    case CW_SRC_IO: return "io";
    case CW_SRC_NET: return "net";
    case CW_SRC_MEM: return "mem";
    default: return "unknown";
  }
}

std::optional<uint8_t> source_from_name(std::string_view name) {
  for (uint8_t s = CW_SRC_CUDA; s <= CW_SRC_MEM; ++s)
    if (source_name(s) == name) return s;
  return std::nullopt;
}

std::string op_name(uint16_t op) {
  const OpInfo* o = find_op(op);
  return o ? std::string(o->name) : "op" + std::to_string(op);
}

const char* op_layer(uint16_t op) {
  const OpInfo* o = find_op(op);
  return o ? source_name(o->source).data() : "unknown";
}

namespace {

OpFamily family_of(uint16_t op, bool& blocking) {
  const OpInfo* o = find_op(op);
  blocking = o && o->blocking;
  return o ? o->family : OpFamily::host;
}

}  // namespace

bool is_gpu_wait_op(uint16_t op) {
  bool blocking = false;
  OpFamily f = family_of(op, blocking);
  return f == OpFamily::sync || (f == OpFamily::copy && blocking);
}

bool is_sync_copy_op(uint16_t op) {
  bool blocking = false;
  return family_of(op, blocking) == OpFamily::copy && blocking;
}

bool is_submit_op(uint16_t op) {
  bool blocking = false;
  switch (family_of(op, blocking)) {
    case OpFamily::launch: case OpFamily::graph: case OpFamily::copy: case OpFamily::memset: return true;
    default: return false;
  }
}

bool is_launch_op(uint16_t op) {
  bool blocking = false;
  return family_of(op, blocking) == OpFamily::launch;
}

bool is_device_alloc_op(uint16_t op) {
  bool blocking = false;
  return family_of(op, blocking) == OpFamily::alloc;
}

bool is_collective_op(uint16_t op) {
  bool blocking = false;
  return family_of(op, blocking) == OpFamily::collective;
}

bool is_traced_call_op(uint16_t op) {
  const OpInfo* o = find_op(op);
  return o && o->is_call && o->family != OpFamily::host && o->family != OpFamily::group;
}

CallRecording op_recording(uint16_t op) {
  for (uint16_t id : kFastCounted)
    if (id == op) return CallRecording::fast_counted;
  return CallRecording::every_call;
}

int args_needed(uint16_t op) {
  const OpInfo* o = find_op(op);
  if (!o) return 0;
  switch (o->family) {
    case OpFamily::collective: case OpFamily::p2p: return 5;  // count, comm, rank, nranks, seq
    case OpFamily::host:  // block, page_alloc, oom: a0..a3; tcp: ports in a4 (IPv6), sock_owner in a5
      if (op == CW_OP_CALLS_AGGREGATED) return 3;  // calls, calls_ns, last_op
      return o->source == CW_SRC_NET ? 6 : o->source >= CW_SRC_IO ? 4 : 0;
    case OpFamily::graph_build: return 4;  // graph exec a1, graph a2, stream a3
    default: break;
  }
  if (is_sync_copy_op(op)) return 3;  // bytes, ptr, kind
  if (is_submit_op(op)) return 2;     // a1: kernel function (graph launches: the graph exec)
  return 0;
}

}  // namespace causeway
