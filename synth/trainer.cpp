#include "synth/trainer.h"

#include <algorithm>

#include "bpf/events.h"

namespace causeway::synth {

Trainer::Trainer(DemoBuilder& b, Rng& rng, TrainerSpec spec) : b_(b), rng_(rng), spec_(std::move(spec)) {
  const std::string py = spec_.script + ":";
  st_sync_ = b_.stack({"libcudart.so.13!cudaStreamSynchronize+0x4", "libtorch_cuda.so!c10::cuda::stream_synchronize+0x3a",
                       "libtorch_python.so!THCPStream_synchronize+0x5e", "python3.11!_PyEval_EvalFrameDefault+0x2c1b",
                       py + "142 (train_step: loss.item())"});
  st_launch_ = b_.stack({"libcudart.so.13!cudaLaunchKernel+0x4", "libtorch_cuda.so!at::native::gemm_kernel_launch+0x91",
                         "libtorch_cuda.so!at::native::addmm_out_cuda_impl+0x2e4",
                         "libtorch_python.so!torch::autograd::THPVariable_addmm+0x188", py + "131 (forward)"});
  st_copy_ = b_.stack({"libcudart.so.13!cudaMemcpyAsync+0x4", "libtorch_cuda.so!at::native::copy_kernel_cuda+0x2d7",
                       "libtorch_python.so!THPVariable_to+0x1c3", py + "127 (batch.to(device))"});
  st_malloc_ = b_.stack({"libcudart.so.13!cudaMalloc+0x4",
                         "libc10_cuda.so!c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc+0x6f1",
                         "libtorch_cuda.so!at::native::empty_cuda+0x8c", py + "135 (forward)"});
  st_free_ = b_.stack({"libcudart.so.13!cudaFree+0x4",
                       "libc10_cuda.so!c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::emptyCache+0x1a2",
                       "libtorch_python.so!THCPModule_emptyCache+0x2f", py + "150 (torch.cuda.empty_cache())"});
  st_host_alloc_ = b_.stack({"libcudart.so.13!cudaMallocHost+0x4",
                             "libc10_cuda.so!at::cuda::CachingHostAllocator::allocate+0x1f3",
                             "libtorch_cuda.so!at::native::pin_memory_cuda+0x61", py + "118 (DataLoader pin_memory)"});
}

void Trainer::register_process(int64_t first_ns, int64_t last_ns, const std::string& comm) {
  b_.process(spec_.pid, 1, comm, "python3 " + spec_.script + " --config configs/llama-7b.yaml", "/usr/bin/python3.11",
             first_ns, last_ns, 0x2a1f, "", "/user.slice/user-1000.slice/session-3.scope");
  if (spec_.tid != spec_.pid) b_.thread(spec_.tid, spec_.pid, comm);
}

StepTimes Trainer::launch_phase(int64_t t, double gpu_slowdown) {
  const uint32_t pid = spec_.pid, tid = spec_.tid;
  int64_t copy_dur = rng_.around(12 * kUs);
  b_.call(pid, tid, CW_OP_CUDA_MEMCPY_ASYNC, t, copy_dur, {spec_.batch_bytes, 0x7f3a60000000, 1, 0x55d0c0de}, 0,
          st_copy_, spec_.cpu);
  gpu_busy_until_ = std::max(gpu_busy_until_, t + copy_dur) + static_cast<int64_t>(spec_.batch_bytes / 20);  // ~20 GB/s
  t += copy_dur + rng_.around(spec_.gap_us * kUs);
  for (int k = 0; k < spec_.kernels; ++k) {
    int64_t dur = rng_.around(spec_.launch_us * kUs);
    b_.call(pid, tid, CW_OP_CUDA_LAUNCH_KERNEL, t, dur,
            {0, static_cast<int64_t>(kernel_function(k % 12)), 0, 0x55d0c0de, pack_dim3(256 + 16 * (k % 5), 1, 1),
             pack_dim3(256, 1, 1)},
            0, st_launch_, spec_.cpu);
    gpu_busy_until_ = std::max(gpu_busy_until_, t + dur) +
                      static_cast<int64_t>(static_cast<double>(rng_.around(spec_.kernel_us * kUs)) * gpu_slowdown);
    t += dur + rng_.around(spec_.gap_us * kUs);
  }
  return StepTimes{t, gpu_busy_until_};
}

int64_t Trainer::natural_sync_end(const StepTimes& s) const {
  return std::max(s.gpu_done, s.sync_start + 3 * kUs) + 2 * kUs;
}

void Trainer::sync(int64_t start, int64_t end) {
  b_.call(spec_.pid, spec_.tid, CW_OP_CUDA_STREAM_SYNC, start, end - start, {0, 0, 0, 0x55d0c0de}, 0, st_sync_,
          spec_.cpu);
}

int64_t Trainer::tail(int64_t sync_end) { return sync_end + rng_.around(spec_.tail_us * kUs); }

int64_t Trainer::step(int64_t t, double gpu_slowdown) {
  StepTimes s = launch_phase(t, gpu_slowdown);
  int64_t end = natural_sync_end(s);
  sync(s.sync_start, end);
  return tail(end);
}

}  // namespace causeway::synth
