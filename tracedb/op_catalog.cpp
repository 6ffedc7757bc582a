#include "tracedb/op_catalog.h"

#include <array>

#include "bpf/events.h"

namespace causeway {
namespace {

// Arg layouts (see schema_docs for the views that decode them):
constexpr std::string_view kAlloc = "bytes,device_ptr";
constexpr std::string_view kFree = ",device_ptr";
constexpr std::string_view kCopy = "bytes,dst_ptr,copy_kind,stream";
constexpr std::string_view kSet = "bytes,device_ptr,,stream";
constexpr std::string_view kLaunch = ",function,,stream,grid_packed,block_packed";
constexpr std::string_view kStream = ",,,stream";
constexpr std::string_view kColl = "count,comm_hash,rank,nranks,seq,datatype|redop<<8|peer<<16";

constexpr OpInfo kCatalog[] = {
    {CW_OP_CUDA_MALLOC, CW_SRC_CUDA, "cudaMalloc", true, kAlloc, OpFamily::alloc},
    {CW_OP_CUDA_MALLOC_MANAGED, CW_SRC_CUDA, "cudaMallocManaged", true, kAlloc, OpFamily::alloc},
    {CW_OP_CUDA_MALLOC_HOST, CW_SRC_CUDA, "cudaMallocHost", true, kAlloc, OpFamily::host_alloc},
    {CW_OP_CUDA_FREE, CW_SRC_CUDA, "cudaFree", true, kFree, OpFamily::alloc},
    {CW_OP_CUDA_MEMCPY, CW_SRC_CUDA, "cudaMemcpy", true, kCopy, OpFamily::copy, true},
    {CW_OP_CUDA_MEMCPY_ASYNC, CW_SRC_CUDA, "cudaMemcpyAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CUDA_MEMCPY_2D, CW_SRC_CUDA, "cudaMemcpy2D", true, kCopy, OpFamily::copy, true},
    {CW_OP_CUDA_MEMCPY_2D_ASYNC, CW_SRC_CUDA, "cudaMemcpy2DAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CUDA_MEMCPY_PEER, CW_SRC_CUDA, "cudaMemcpyPeer", true, kCopy, OpFamily::copy, true},
    {CW_OP_CUDA_MEMCPY_PEER_ASYNC, CW_SRC_CUDA, "cudaMemcpyPeerAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CUDA_MEMSET, CW_SRC_CUDA, "cudaMemset", true, kSet, OpFamily::memset},
    {CW_OP_CUDA_MEMSET_ASYNC, CW_SRC_CUDA, "cudaMemsetAsync", true, kSet, OpFamily::memset},
    {CW_OP_CUDA_LAUNCH_KERNEL, CW_SRC_CUDA, "cudaLaunchKernel", true, kLaunch, OpFamily::launch},
    {CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, CW_SRC_CUDA, "__cudaLaunchKernel", true, kLaunch, OpFamily::launch},
    {CW_OP_CUDA_LAUNCH_KERNEL_EXC, CW_SRC_CUDA, "cudaLaunchKernelExC", true, kLaunch, OpFamily::launch},
    {CW_OP_CUDA_GRAPH_LAUNCH, CW_SRC_CUDA, "cudaGraphLaunch", true, kStream, OpFamily::graph},
    {CW_OP_CUDA_STREAM_SYNC, CW_SRC_CUDA, "cudaStreamSynchronize", true, kStream, OpFamily::sync, true},
    {CW_OP_CUDA_DEVICE_SYNC, CW_SRC_CUDA, "cudaDeviceSynchronize", true, "", OpFamily::sync, true},
    {CW_OP_CUDA_EVENT_SYNC, CW_SRC_CUDA, "cudaEventSynchronize", true, ",event", OpFamily::sync, true},
    {CW_OP_CUDA_MEMCPY_ASYNC_PTSZ, CW_SRC_CUDA, "cudaMemcpyAsync_ptsz", true, kCopy, OpFamily::copy},
    {CW_OP_CUDA_LAUNCH_KERNEL_PTSZ, CW_SRC_CUDA, "cudaLaunchKernel_ptsz", true, kLaunch, OpFamily::launch},
    {CW_OP_CUDA_MEMSET_ASYNC_PTSZ, CW_SRC_CUDA, "cudaMemsetAsync_ptsz", true, kSet, OpFamily::memset},
    {CW_OP_CUDA_GRAPH_LAUNCH_PTSZ, CW_SRC_CUDA, "cudaGraphLaunch_ptsz", true, kStream, OpFamily::graph},
    {CW_OP_CUDA_STREAM_SYNC_PTSZ, CW_SRC_CUDA, "cudaStreamSynchronize_ptsz", true, kStream, OpFamily::sync, true},
    {CW_OP_CUDA_MEMCPY_PTDS, CW_SRC_CUDA, "cudaMemcpy_ptds", true, kCopy, OpFamily::copy, true},

    {CW_OP_CU_LAUNCH_KERNEL, CW_SRC_DRIVER, "cuLaunchKernel", true, kLaunch, OpFamily::launch},
    {CW_OP_CU_LAUNCH_KERNEL_EX, CW_SRC_DRIVER, "cuLaunchKernelEx", true, kLaunch, OpFamily::launch},
    {CW_OP_CU_MEM_ALLOC, CW_SRC_DRIVER, "cuMemAlloc", true, kAlloc, OpFamily::alloc},
    {CW_OP_CU_MEM_FREE, CW_SRC_DRIVER, "cuMemFree", true, kFree, OpFamily::alloc},
    {CW_OP_CU_MEM_ALLOC_MANAGED, CW_SRC_DRIVER, "cuMemAllocManaged", true, kAlloc, OpFamily::alloc},
    {CW_OP_CU_MEMCPY, CW_SRC_DRIVER, "cuMemcpy", true, kCopy, OpFamily::copy, true},
    {CW_OP_CU_MEMCPY_ASYNC, CW_SRC_DRIVER, "cuMemcpyAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CU_MEMCPY_HTOD, CW_SRC_DRIVER, "cuMemcpyHtoD", true, kCopy, OpFamily::copy, true},
    {CW_OP_CU_MEMCPY_HTOD_ASYNC, CW_SRC_DRIVER, "cuMemcpyHtoDAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CU_MEMCPY_DTOH, CW_SRC_DRIVER, "cuMemcpyDtoH", true, kCopy, OpFamily::copy, true},
    {CW_OP_CU_MEMCPY_DTOH_ASYNC, CW_SRC_DRIVER, "cuMemcpyDtoHAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CU_MEMCPY_DTOD, CW_SRC_DRIVER, "cuMemcpyDtoD", true, kCopy, OpFamily::copy, true},
    {CW_OP_CU_MEMCPY_DTOD_ASYNC, CW_SRC_DRIVER, "cuMemcpyDtoDAsync", true, kCopy, OpFamily::copy},
    {CW_OP_CU_CTX_SYNC, CW_SRC_DRIVER, "cuCtxSynchronize", true, "", OpFamily::sync, true},
    {CW_OP_CU_STREAM_SYNC, CW_SRC_DRIVER, "cuStreamSynchronize", true, kStream, OpFamily::sync, true},
    {CW_OP_CU_GRAPH_LAUNCH, CW_SRC_DRIVER, "cuGraphLaunch", true, kStream, OpFamily::graph},

    {CW_OP_NCCL_COMM_INIT_RANK, CW_SRC_NCCL, "ncclCommInitRank", true, ",comm_hash,rank,nranks", OpFamily::setup},
    {CW_OP_NCCL_COMM_INIT_ALL, CW_SRC_NCCL, "ncclCommInitAll", true, ",,,ndev", OpFamily::setup},
    {CW_OP_NCCL_COMM_DESTROY, CW_SRC_NCCL, "ncclCommDestroy", true, ",comm_hash,rank,nranks", OpFamily::setup},
    {CW_OP_NCCL_ALL_REDUCE, CW_SRC_NCCL, "ncclAllReduce", true, kColl, OpFamily::collective},
    {CW_OP_NCCL_ALL_GATHER, CW_SRC_NCCL, "ncclAllGather", true, kColl, OpFamily::collective},
    {CW_OP_NCCL_REDUCE_SCATTER, CW_SRC_NCCL, "ncclReduceScatter", true, kColl, OpFamily::collective},
    {CW_OP_NCCL_BROADCAST, CW_SRC_NCCL, "ncclBroadcast", true, kColl, OpFamily::collective},
    {CW_OP_NCCL_BCAST, CW_SRC_NCCL, "ncclBcast", true, kColl, OpFamily::collective},
    {CW_OP_NCCL_REDUCE, CW_SRC_NCCL, "ncclReduce", true, kColl, OpFamily::collective},
    {CW_OP_NCCL_SEND, CW_SRC_NCCL, "ncclSend", true, kColl, OpFamily::p2p},
    {CW_OP_NCCL_RECV, CW_SRC_NCCL, "ncclRecv", true, kColl, OpFamily::p2p},
    {CW_OP_NCCL_GROUP_START, CW_SRC_NCCL, "ncclGroupStart", true, "", OpFamily::group},
    {CW_OP_NCCL_GROUP_END, CW_SRC_NCCL, "ncclGroupEnd", true, "", OpFamily::group},

    {CW_OP_SCHED_SWITCH, CW_SRC_HOST, "sched_switch", false, "", OpFamily::host},
    {CW_OP_SCHED_WAKEUP, CW_SRC_HOST, "sched_wakeup", false, "", OpFamily::host},
    {CW_OP_PROC_EXEC, CW_SRC_HOST, "process_exec", false, "ppid", OpFamily::host},
    {CW_OP_PROC_FORK, CW_SRC_HOST, "process_fork", false, "child_pid", OpFamily::host},
    {CW_OP_PROC_EXIT, CW_SRC_HOST, "process_exit", false, "exit_code", OpFamily::host},
    {CW_OP_BLOCK_RQ, CW_SRC_IO, "block_rq", true, "bytes,dev,sector,is_write", OpFamily::host},
    {CW_OP_TCP_RETRANSMIT, CW_SRC_NET, "tcp_retransmit", false, "saddr,sport,daddr,dport,state,sock_owner", OpFamily::host},
    {CW_OP_TCP_RETRANSMIT6, CW_SRC_NET, "tcp_retransmit6", false,
     "saddr_hi,saddr_lo,daddr_hi,daddr_lo,sport|dport<<16|state<<32,sock_owner", OpFamily::host},
    {CW_OP_PAGE_ALLOC, CW_SRC_MEM, "page_alloc", false, "pages,max_order", OpFamily::host},
    {CW_OP_OOM_KILL, CW_SRC_MEM, "oom_kill", false, "victim_pid,total_pages", OpFamily::host},
};

// The BPF side derives an event's source from its op id range (bpf/calls.bpf.h: < 200 runtime,
// < 300 driver, else NCCL) and the correlator reads collectives' (comm, seq) from a1/a4: the
// table must agree with both.
constexpr bool sources_match_bpf_ranges() {
  for (const OpInfo& op : kCatalog) {
    if (op.id >= 100 && op.id < 200 && op.source != CW_SRC_CUDA) return false;
    if (op.id >= 200 && op.id < 300 && op.source != CW_SRC_DRIVER) return false;
    if (op.id >= 300 && op.id < 400 && op.source != CW_SRC_NCCL) return false;
    if (op.id >= 400 && op.source < CW_SRC_HOST) return false;
  }
  return true;
}
static_assert(sources_match_bpf_ranges(), "an op id is outside its source's range in bpf/events.h");

constexpr bool ids_fit_the_index() {
  for (const OpInfo& op : kCatalog)
    if (op.id >= kMaxOpId) return false;
  return true;
}
static_assert(ids_fit_the_index());

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

}  // namespace causeway
