#include "tracedb/op_catalog.h"

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

const std::vector<OpInfo> kCatalog = {
    {CW_OP_CUDA_MALLOC, CW_SRC_CUDA, "cudaMalloc", true, kAlloc},
    {CW_OP_CUDA_MALLOC_MANAGED, CW_SRC_CUDA, "cudaMallocManaged", true, kAlloc},
    {CW_OP_CUDA_MALLOC_HOST, CW_SRC_CUDA, "cudaMallocHost", true, kAlloc},
    {CW_OP_CUDA_FREE, CW_SRC_CUDA, "cudaFree", true, kFree},
    {CW_OP_CUDA_MEMCPY, CW_SRC_CUDA, "cudaMemcpy", true, kCopy},
    {CW_OP_CUDA_MEMCPY_ASYNC, CW_SRC_CUDA, "cudaMemcpyAsync", true, kCopy},
    {CW_OP_CUDA_MEMCPY_2D, CW_SRC_CUDA, "cudaMemcpy2D", true, kCopy},
    {CW_OP_CUDA_MEMCPY_2D_ASYNC, CW_SRC_CUDA, "cudaMemcpy2DAsync", true, kCopy},
    {CW_OP_CUDA_MEMCPY_PEER, CW_SRC_CUDA, "cudaMemcpyPeer", true, kCopy},
    {CW_OP_CUDA_MEMCPY_PEER_ASYNC, CW_SRC_CUDA, "cudaMemcpyPeerAsync", true, kCopy},
    {CW_OP_CUDA_MEMSET, CW_SRC_CUDA, "cudaMemset", true, kSet},
    {CW_OP_CUDA_MEMSET_ASYNC, CW_SRC_CUDA, "cudaMemsetAsync", true, kSet},
    {CW_OP_CUDA_LAUNCH_KERNEL, CW_SRC_CUDA, "cudaLaunchKernel", true, kLaunch},
    {CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, CW_SRC_CUDA, "__cudaLaunchKernel", true, kLaunch},
    {CW_OP_CUDA_LAUNCH_KERNEL_EXC, CW_SRC_CUDA, "cudaLaunchKernelExC", true, kLaunch},
    {CW_OP_CUDA_GRAPH_LAUNCH, CW_SRC_CUDA, "cudaGraphLaunch", true, kStream},
    {CW_OP_CUDA_STREAM_SYNC, CW_SRC_CUDA, "cudaStreamSynchronize", true, kStream},
    {CW_OP_CUDA_DEVICE_SYNC, CW_SRC_CUDA, "cudaDeviceSynchronize", true, ""},
    {CW_OP_CUDA_EVENT_SYNC, CW_SRC_CUDA, "cudaEventSynchronize", true, ",event"},
    {CW_OP_CUDA_MEMCPY_ASYNC_PTSZ, CW_SRC_CUDA, "cudaMemcpyAsync_ptsz", true, kCopy},
    {CW_OP_CUDA_LAUNCH_KERNEL_PTSZ, CW_SRC_CUDA, "cudaLaunchKernel_ptsz", true, kLaunch},
    {CW_OP_CUDA_MEMSET_ASYNC_PTSZ, CW_SRC_CUDA, "cudaMemsetAsync_ptsz", true, kSet},
    {CW_OP_CUDA_GRAPH_LAUNCH_PTSZ, CW_SRC_CUDA, "cudaGraphLaunch_ptsz", true, kStream},
    {CW_OP_CUDA_STREAM_SYNC_PTSZ, CW_SRC_CUDA, "cudaStreamSynchronize_ptsz", true, kStream},
    {CW_OP_CUDA_MEMCPY_PTDS, CW_SRC_CUDA, "cudaMemcpy_ptds", true, kCopy},

    {CW_OP_CU_LAUNCH_KERNEL, CW_SRC_DRIVER, "cuLaunchKernel", true, kLaunch},
    {CW_OP_CU_LAUNCH_KERNEL_EX, CW_SRC_DRIVER, "cuLaunchKernelEx", true, kLaunch},
    {CW_OP_CU_MEM_ALLOC, CW_SRC_DRIVER, "cuMemAlloc", true, kAlloc},
    {CW_OP_CU_MEM_FREE, CW_SRC_DRIVER, "cuMemFree", true, kFree},
    {CW_OP_CU_MEM_ALLOC_MANAGED, CW_SRC_DRIVER, "cuMemAllocManaged", true, kAlloc},
    {CW_OP_CU_MEMCPY, CW_SRC_DRIVER, "cuMemcpy", true, kCopy},
    {CW_OP_CU_MEMCPY_ASYNC, CW_SRC_DRIVER, "cuMemcpyAsync", true, kCopy},
    {CW_OP_CU_MEMCPY_HTOD, CW_SRC_DRIVER, "cuMemcpyHtoD", true, kCopy},
    {CW_OP_CU_MEMCPY_HTOD_ASYNC, CW_SRC_DRIVER, "cuMemcpyHtoDAsync", true, kCopy},
    {CW_OP_CU_MEMCPY_DTOH, CW_SRC_DRIVER, "cuMemcpyDtoH", true, kCopy},
    {CW_OP_CU_MEMCPY_DTOH_ASYNC, CW_SRC_DRIVER, "cuMemcpyDtoHAsync", true, kCopy},
    {CW_OP_CU_MEMCPY_DTOD, CW_SRC_DRIVER, "cuMemcpyDtoD", true, kCopy},
    {CW_OP_CU_MEMCPY_DTOD_ASYNC, CW_SRC_DRIVER, "cuMemcpyDtoDAsync", true, kCopy},
    {CW_OP_CU_CTX_SYNC, CW_SRC_DRIVER, "cuCtxSynchronize", true, ""},
    {CW_OP_CU_STREAM_SYNC, CW_SRC_DRIVER, "cuStreamSynchronize", true, kStream},
    {CW_OP_CU_GRAPH_LAUNCH, CW_SRC_DRIVER, "cuGraphLaunch", true, kStream},

    {CW_OP_NCCL_COMM_INIT_RANK, CW_SRC_NCCL, "ncclCommInitRank", true, ",comm_hash,rank,nranks"},
    {CW_OP_NCCL_COMM_INIT_ALL, CW_SRC_NCCL, "ncclCommInitAll", true, ",,,ndev"},
    {CW_OP_NCCL_COMM_DESTROY, CW_SRC_NCCL, "ncclCommDestroy", true, ",comm_hash,rank,nranks"},
    {CW_OP_NCCL_ALL_REDUCE, CW_SRC_NCCL, "ncclAllReduce", true, kColl},
    {CW_OP_NCCL_ALL_GATHER, CW_SRC_NCCL, "ncclAllGather", true, kColl},
    {CW_OP_NCCL_REDUCE_SCATTER, CW_SRC_NCCL, "ncclReduceScatter", true, kColl},
    {CW_OP_NCCL_BROADCAST, CW_SRC_NCCL, "ncclBroadcast", true, kColl},
    {CW_OP_NCCL_BCAST, CW_SRC_NCCL, "ncclBcast", true, kColl},
    {CW_OP_NCCL_REDUCE, CW_SRC_NCCL, "ncclReduce", true, kColl},
    {CW_OP_NCCL_SEND, CW_SRC_NCCL, "ncclSend", true, kColl},
    {CW_OP_NCCL_RECV, CW_SRC_NCCL, "ncclRecv", true, kColl},
    {CW_OP_NCCL_GROUP_START, CW_SRC_NCCL, "ncclGroupStart", true, ""},
    {CW_OP_NCCL_GROUP_END, CW_SRC_NCCL, "ncclGroupEnd", true, ""},

    {CW_OP_SCHED_SWITCH, CW_SRC_HOST, "sched_switch", false, ""},
    {CW_OP_SCHED_WAKEUP, CW_SRC_HOST, "sched_wakeup", false, ""},
    {CW_OP_PROC_EXEC, CW_SRC_HOST, "process_exec", false, "ppid"},
    {CW_OP_PROC_FORK, CW_SRC_HOST, "process_fork", false, "child_pid"},
    {CW_OP_PROC_EXIT, CW_SRC_HOST, "process_exit", false, "exit_code"},
    {CW_OP_BLOCK_RQ, CW_SRC_IO, "block_rq", true, "bytes,dev,sector,is_write"},
    {CW_OP_TCP_RETRANSMIT, CW_SRC_NET, "tcp_retransmit", false, "saddr,sport,daddr,dport,state"},
    {CW_OP_PAGE_ALLOC, CW_SRC_MEM, "page_alloc", false, "pages,max_order"},
    {CW_OP_OOM_KILL, CW_SRC_MEM, "oom_kill", false, "victim_pid,total_pages"},
};

}  // namespace

const std::vector<OpInfo>& op_catalog() { return kCatalog; }

const OpInfo* find_op(uint16_t id) {
  for (const OpInfo& op : kCatalog)
    if (op.id == id) return &op;
  return nullptr;
}

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : kCatalog)
    if (op.name == name) return &op;
  return nullptr;
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
