#include "collector/probe_table.h"

#include "tracedb/op_catalog.h"

#include <vector>

#include "bpf/events.h"

namespace causeway::collector {
namespace {

using L = LibKind;
constexpr uint8_t S = kHasStream;

// cudaMemcpyKind / CUDA driver direction: 1 HtoD, 2 DtoH, 3 DtoD, 4 default (unified).
const std::vector<ProbeSpec> kSpecs = {
    // CUDA runtime
    {L::cudart, "cudaMalloc", CW_OP_CUDA_MALLOC, CW_DC_ALLOC, 0, 0, 0, 0, 0, true},
    {L::cudart, "cudaMallocManaged", CW_OP_CUDA_MALLOC_MANAGED, CW_DC_ALLOC, 0, 0, 0, 0, 0, true},
    {L::cudart, "cudaMallocHost", CW_OP_CUDA_MALLOC_HOST, CW_DC_ALLOC, 0, 0, 0, 0, 0, true},
    {L::cudart, "cudaFree", CW_OP_CUDA_FREE, CW_DC_FREE},
    {L::cudart, "cudaMemcpy", CW_OP_CUDA_MEMCPY, CW_DC_COPY},
    {L::cudart, "cudaMemcpy_ptds", CW_OP_CUDA_MEMCPY_PTDS, CW_DC_COPY},
    {L::cudart, "cudaMemcpyAsync", CW_OP_CUDA_MEMCPY_ASYNC, CW_DC_COPY, S},
    {L::cudart, "cudaMemcpyAsync_ptsz", CW_OP_CUDA_MEMCPY_ASYNC_PTSZ, CW_DC_COPY, S},
    {L::cudart, "cudaMemcpy2D", CW_OP_CUDA_MEMCPY_2D, CW_DC_COPY_2D, 0, 1},
    {L::cudart, "cudaMemcpy2DAsync", CW_OP_CUDA_MEMCPY_2D_ASYNC, CW_DC_COPY_2D, S, 2},
    {L::cudart, "cudaMemcpyPeer", CW_OP_CUDA_MEMCPY_PEER, CW_DC_COPY_PEER},
    {L::cudart, "cudaMemcpyPeerAsync", CW_OP_CUDA_MEMCPY_PEER_ASYNC, CW_DC_COPY_PEER, S},
    {L::cudart, "cudaMemset", CW_OP_CUDA_MEMSET, CW_DC_SET},
    {L::cudart, "cudaMemsetAsync", CW_OP_CUDA_MEMSET_ASYNC, CW_DC_SET, S},
    {L::cudart, "cudaMemsetAsync_ptsz", CW_OP_CUDA_MEMSET_ASYNC_PTSZ, CW_DC_SET, S},
    {L::cudart, "cudaLaunchKernel", CW_OP_CUDA_LAUNCH_KERNEL, CW_DC_LAUNCH_RT, S, 2},
    {L::cudart, "cudaLaunchKernel_ptsz", CW_OP_CUDA_LAUNCH_KERNEL_PTSZ, CW_DC_LAUNCH_RT, S, 2},
    {L::cudart, "__cudaLaunchKernel", CW_OP_CUDA_LAUNCH_KERNEL_INTERNAL, CW_DC_LAUNCH_RT, S, 2},
    {L::cudart, "cudaLaunchKernelExC", CW_OP_CUDA_LAUNCH_KERNEL_EXC, CW_DC_LAUNCH_RT_EXC, S, 0, 1},
    {L::cudart, "cudaGraphLaunch", CW_OP_CUDA_GRAPH_LAUNCH, CW_DC_STREAM1, S},
    {L::cudart, "cudaGraphLaunch_ptsz", CW_OP_CUDA_GRAPH_LAUNCH_PTSZ, CW_DC_STREAM1, S},
    {L::cudart, "cudaStreamSynchronize", CW_OP_CUDA_STREAM_SYNC, CW_DC_STREAM0, S},
    {L::cudart, "cudaStreamSynchronize_ptsz", CW_OP_CUDA_STREAM_SYNC_PTSZ, CW_DC_STREAM0, S},
    {L::cudart, "cudaDeviceSynchronize", CW_OP_CUDA_DEVICE_SYNC, CW_DC_NONE},
    {L::cudart, "cudaEventSynchronize", CW_OP_CUDA_EVENT_SYNC, CW_DC_EVENT},
    // CUDA driver
    {L::cuda, "cuLaunchKernel", CW_OP_CU_LAUNCH_KERNEL, CW_DC_LAUNCH_DRV, S, 3},
    {L::cuda, "cuLaunchKernel_ptsz", CW_OP_CU_LAUNCH_KERNEL, CW_DC_LAUNCH_DRV, S, 3},
    {L::cuda, "cuLaunchKernelEx", CW_OP_CU_LAUNCH_KERNEL_EX, CW_DC_LAUNCH_DRV_EX, S, 0, 1},
    {L::cuda, "cuLaunchKernelEx_ptsz", CW_OP_CU_LAUNCH_KERNEL_EX, CW_DC_LAUNCH_DRV_EX, S, 0, 1},
    {L::cuda, "cuMemAlloc_v2", CW_OP_CU_MEM_ALLOC, CW_DC_ALLOC, 0, 0, 0, 0, 0, true},
    {L::cuda, "cuMemFree_v2", CW_OP_CU_MEM_FREE, CW_DC_FREE},
    {L::cuda, "cuMemAllocManaged", CW_OP_CU_MEM_ALLOC_MANAGED, CW_DC_ALLOC, 0, 0, 0, 0, 0, true},
    {L::cuda, "cuMemcpy", CW_OP_CU_MEMCPY, CW_DC_DRV_COPY, 4},
    {L::cuda, "cuMemcpyAsync", CW_OP_CU_MEMCPY_ASYNC, CW_DC_DRV_COPY, 4 | S},
    {L::cuda, "cuMemcpyHtoD_v2", CW_OP_CU_MEMCPY_HTOD, CW_DC_DRV_COPY, 1},
    {L::cuda, "cuMemcpyHtoDAsync_v2", CW_OP_CU_MEMCPY_HTOD_ASYNC, CW_DC_DRV_COPY, 1 | S},
    {L::cuda, "cuMemcpyDtoH_v2", CW_OP_CU_MEMCPY_DTOH, CW_DC_DRV_COPY, 2},
    {L::cuda, "cuMemcpyDtoHAsync_v2", CW_OP_CU_MEMCPY_DTOH_ASYNC, CW_DC_DRV_COPY, 2 | S},
    {L::cuda, "cuMemcpyDtoD_v2", CW_OP_CU_MEMCPY_DTOD, CW_DC_DRV_COPY, 3},
    {L::cuda, "cuMemcpyDtoDAsync_v2", CW_OP_CU_MEMCPY_DTOD_ASYNC, CW_DC_DRV_COPY, 3 | S},
    {L::cuda, "cuCtxSynchronize", CW_OP_CU_CTX_SYNC, CW_DC_NONE},
    {L::cuda, "cuStreamSynchronize", CW_OP_CU_STREAM_SYNC, CW_DC_STREAM0, S},
    {L::cuda, "cuGraphLaunch", CW_OP_CU_GRAPH_LAUNCH, CW_DC_STREAM1, S},
    // NCCL
    {L::nccl, "ncclCommInitRank", CW_OP_NCCL_COMM_INIT_RANK, CW_DC_NCCL_INIT_RANK, 0, 0, 0, 0, CW_NCCL_INIT_RANK},
    {L::nccl, "ncclCommInitAll", CW_OP_NCCL_COMM_INIT_ALL, CW_DC_NCCL_INIT_ALL, 0, 0, 0, 0, CW_NCCL_INIT_ALL},
    {L::nccl, "ncclCommDestroy", CW_OP_NCCL_COMM_DESTROY, CW_DC_NCCL_DESTROY, 0, 0, 0, 1, CW_NCCL_DESTROY},
    {L::nccl, "ncclAllReduce", CW_OP_NCCL_ALL_REDUCE, CW_DC_NCCL_REDUCE_LIKE, S, 1, 0, 6, CW_NCCL_COLL},
    {L::nccl, "ncclReduceScatter", CW_OP_NCCL_REDUCE_SCATTER, CW_DC_NCCL_REDUCE_LIKE, S, 1, 0, 6, CW_NCCL_COLL},
    {L::nccl, "ncclAllGather", CW_OP_NCCL_ALL_GATHER, CW_DC_NCCL_ALL_GATHER, S, 0, 0, 5, CW_NCCL_COLL},
    {L::nccl, "ncclBroadcast", CW_OP_NCCL_BROADCAST, CW_DC_NCCL_BROADCAST, S, 1, 0, 6, CW_NCCL_COLL},
    {L::nccl, "ncclBcast", CW_OP_NCCL_BCAST, CW_DC_NCCL_BCAST, S, 0, 0, 5, CW_NCCL_COLL},
    {L::nccl, "ncclReduce", CW_OP_NCCL_REDUCE, CW_DC_NCCL_REDUCE, S, 2, 0, 7, CW_NCCL_COLL},
    {L::nccl, "ncclSend", CW_OP_NCCL_SEND, CW_DC_NCCL_P2P, S, 0, 0, 5, CW_NCCL_COLL},
    {L::nccl, "ncclRecv", CW_OP_NCCL_RECV, CW_DC_NCCL_P2P, S, 0, 0, 5, CW_NCCL_COLL},
    {L::nccl, "ncclGroupStart", CW_OP_NCCL_GROUP_START, CW_DC_NONE},
    {L::nccl, "ncclGroupEnd", CW_OP_NCCL_GROUP_END, CW_DC_NONE},
};

}  // namespace

std::span<const ProbeSpec> probe_specs() { return kSpecs; }

uint64_t make_cookie(const ProbeSpec& s) {
  // The record's source comes from the op table, so the BPF side keeps no op-id ranges.
  const OpInfo* info = find_op(s.op);
  const uint64_t src = info ? info->source : 0;
  return uint64_t{s.op} | uint64_t{s.dclass} << 16 | uint64_t{s.aux} << 24 | uint64_t{s.nstack & 0xfu} << 32 |
         uint64_t{s.struct_reg & 0xfu} << 36 | uint64_t{s.comm_loc & 0xfu} << 40 | uint64_t{s.nccl_role & 0xfu} << 44 |
         uint64_t{s.out_ptr ? 1u : 0u} << 48 | (src & 0xfu) << 52;
}

std::optional<LibKind> lib_kind_of(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.size() >= p.size() && name.substr(0, p.size()) == p; };
  if (starts("libcudart.so")) return LibKind::cudart;
  if (starts("libcuda.so")) return LibKind::cuda;
  if (starts("libnccl.so")) return LibKind::nccl;
  return std::nullopt;
}

std::string_view lib_kind_name(LibKind kind) {
  switch (kind) {
    case LibKind::cudart: return "libcudart";
    case LibKind::cuda: return "libcuda";
    case LibKind::nccl: return "libnccl";
  }
  return "?";
}

}  // namespace causeway::collector
