// A stand-in libcudart.so.13: the entry points causeway probes, with the real signatures and
// a configurable busy-wait instead of a GPU. Built with -fcf-protection so every function
// starts with endbr64 like distro builds, which the collector must step over.
#include <pthread.h>
#include <sys/prctl.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_common.h"

typedef struct {
  unsigned x, y, z;
} dim3;
typedef struct {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  void* stream;
  void* attrs;
  unsigned numAttrs;
} cudaLaunchConfig_t;

static uint64_t g_latency_ns;
static uint64_t g_sleep_ns;  // CW_FAKE_SLEEP_NS: every call also sleeps this long (its thread leaves the CPU inside)
static uint64_t g_graph_build_ns;
static uint64_t g_next_ptr = 0x7f0000000000ull;
static uint64_t g_next_graph = 0x6a0000000000ull;
static uint64_t g_next_exec = 0x6e0000000000ull;

__attribute__((constructor)) static void init(void) {
  g_latency_ns = cwfake_env_latency();
  g_sleep_ns = cwfake_env_ns("CW_FAKE_SLEEP_NS");
  /* A short sleep stays short (no 50 µs timer slack; threads made later inherit it): a call
   * that left its CPU can still be a fast one. */
  if (g_sleep_ns) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  g_graph_build_ns = cwfake_env_graph_build();
}

CWFAKE_EXPORT void cwfake_set_latency_ns(uint64_t ns) { g_latency_ns = ns; }
CWFAKE_EXPORT void cwfake_set_graph_build_ns(uint64_t ns) { g_graph_build_ns = ns; }

// Lock contention inside the runtime: with serialize on, every call takes one process-wide
// lock, and cwfake_hold_lock_ns lets a sibling thread sit on it (sleeping, not spinning).
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_serialize;
CWFAKE_EXPORT void cwfake_set_serialize(int on) { g_serialize = on; }
CWFAKE_EXPORT void cwfake_hold_lock_ns(uint64_t ns) {
  pthread_mutex_lock(&g_lock);
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  nanosleep(&ts, 0);
  pthread_mutex_unlock(&g_lock);
}
static void body(void) {
  if (g_serialize) pthread_mutex_lock(&g_lock);
  cwfake_spin_ns(g_latency_ns);
  if (g_sleep_ns) {
    struct timespec ts = {(time_t)(g_sleep_ns / 1000000000ull), (long)(g_sleep_ns % 1000000000ull)};
    nanosleep(&ts, 0);
  }
  if (g_serialize) pthread_mutex_unlock(&g_lock);
}

// Sizes above 1 TiB fail like an exhausted device: cudaErrorMemoryAllocation = 2.
static int fake_alloc(void** out, size_t bytes) {
  body();
  if (bytes > (1ull << 40)) return 2;
  *out = (void*)__atomic_fetch_add(&g_next_ptr, (bytes + 0xfff) & ~0xfffull, __ATOMIC_RELAXED);
  return 0;
}
#define SPIN_RET0 \
  body();       \
  return 0

CWFAKE_EXPORT int cudaMalloc(void** p, size_t bytes) { return fake_alloc(p, bytes); }
CWFAKE_EXPORT int cudaMallocManaged(void** p, size_t bytes, unsigned flags) { return fake_alloc(p, bytes); }
CWFAKE_EXPORT int cudaMallocHost(void** p, size_t bytes) { return fake_alloc(p, bytes); }
CWFAKE_EXPORT int cudaFree(void* p) { SPIN_RET0; }
// A synchronous copy from pageable host memory reads its source (the real runtime stages it
// through a pinned buffer): with touch on, cudaMemcpy reads a byte of every page of it, so a
// source that is a file mapping not in the page cache faults and waits for block I/O inside
// the call, as a real one does (cw_workload --memcpy-src-file).
static int g_touch_src;
CWFAKE_EXPORT void cwfake_set_touch_src(int on) { g_touch_src = on; }
CWFAKE_EXPORT int cudaMemcpy(void* d, const void* s, size_t n, int kind) {
  if (g_touch_src && s) {
    volatile const char* p = (const char*)s;
    char x = 0;
    for (size_t i = 0; i < n; i += 4096) x ^= p[i];
    (void)x;
  }
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaMemcpyAsync(void* d, const void* s, size_t n, int kind, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemcpyAsync_ptsz(void* d, const void* s, size_t n, int kind, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemcpy_ptds(void* d, const void* s, size_t n, int kind) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemcpy2D(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, int kind) {
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaMemcpy2DAsync(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, int kind,
                                    void* st) {
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaMemcpyPeer(void* d, int dd, const void* s, int sd, size_t n) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemcpyPeerAsync(void* d, int dd, const void* s, int sd, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemset(void* p, int v, size_t n) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemsetAsync(void* p, int v, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cudaMemsetAsync_ptsz(void* p, int v, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, void* st) {
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** args, size_t smem, void* st) {
  SPIN_RET0;
}
// CUDA 13's <<<>>> lowers to __cudaLaunchKernel, which tail-calls cudaLaunchKernel: the same
// four instructions as libcudart.so.13's (push/mov/pop rbp, jmp), so the tracer sees a traced
// function entered at the stack pointer of another still in flight. In assembly: a C tail call
// is up to the compiler's mood (-O1 does not make one).
int __cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, void* st);
__asm__(".text\n"
        ".globl __cudaLaunchKernel\n"
        ".type __cudaLaunchKernel, @function\n"
        "__cudaLaunchKernel:\n"
        "  push %rbp\n"
        "  mov %rsp, %rbp\n"
        "  pop %rbp\n"
        "  jmp cudaLaunchKernel@PLT\n"
        ".size __cudaLaunchKernel, .-__cudaLaunchKernel\n");
CWFAKE_EXPORT int cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f, void** args) { SPIN_RET0; }
CWFAKE_EXPORT int cudaGraphLaunch(void* exec, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cudaGraphLaunch_ptsz(void* exec, void* st) { SPIN_RET0; }

// Graphs. A null graph or exec fails like the real runtime (cudaErrorInvalidValue = 1)
// without writing the out argument.
static int end_capture(void* st, void** graph) {
  cwfake_spin_ns(g_graph_build_ns);
  *graph = cwfake_next_handle(&g_next_graph);
  return 0;
}
static int instantiate(void** exec, void* graph) {
  if (!graph) return 1;
  cwfake_spin_ns(g_graph_build_ns);
  *exec = cwfake_next_handle(&g_next_exec);
  return 0;
}
CWFAKE_EXPORT int cudaStreamBeginCapture(void* st, int mode) { SPIN_RET0; }
CWFAKE_EXPORT int cudaStreamBeginCapture_ptsz(void* st, int mode) { SPIN_RET0; }
CWFAKE_EXPORT int cudaStreamEndCapture(void* st, void** graph) { return end_capture(st, graph); }
CWFAKE_EXPORT int cudaStreamEndCapture_ptsz(void* st, void** graph) { return end_capture(st, graph); }
CWFAKE_EXPORT int cudaGraphInstantiate(void** exec, void* graph, unsigned long long flags) {
  return instantiate(exec, graph);
}
CWFAKE_EXPORT int cudaGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  return instantiate(exec, graph);
}
CWFAKE_EXPORT int cudaGraphInstantiateWithParams(void** exec, void* graph, void* params) {
  return instantiate(exec, graph);
}
CWFAKE_EXPORT int cudaGraphExecDestroy(void* exec) {
  body();
  return exec ? 0 : 1;
}
// The GPU time of the work this thread launched since its last wait: the next stream or
// device sync sleeps it (the host waits for the GPU without spinning), as a real sync waits
// for the queued kernels. inference_server.py sets it per forward pass.
static __thread uint64_t g_gpu_pending_ns;
CWFAKE_EXPORT void cwfake_gpu_ns(uint64_t ns) { g_gpu_pending_ns += ns; }
static void wait_gpu(void) {
  if (!g_gpu_pending_ns) return;
  struct timespec ts = {(time_t)(g_gpu_pending_ns / 1000000000ull), (long)(g_gpu_pending_ns % 1000000000ull)};
  g_gpu_pending_ns = 0;
  nanosleep(&ts, 0);
}
CWFAKE_EXPORT int cudaStreamSynchronize(void* st) {
  wait_gpu();
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaStreamSynchronize_ptsz(void* st) {
  wait_gpu();
  SPIN_RET0;
}
// Twins of cudaStreamSynchronize (same code, names causeway never probes) for bench/trace_cost:
// one carries an empty bpftrace uprobe + uretprobe, one a bpftrace pair that reads the clock at
// entry and return (the least a tracer that times each call pays), one no probe at all. No endbr64:
// bpftrace probes a function's first byte, where the kernel would single-step endbr64
// (~15 µs), while causeway probes the instruction after it.
CWFAKE_EXPORT __attribute__((nocf_check)) int cwfake_twin_probed(void* st) { SPIN_RET0; }
CWFAKE_EXPORT __attribute__((nocf_check)) int cwfake_twin_bare(void* st) { SPIN_RET0; }
CWFAKE_EXPORT __attribute__((nocf_check)) int cwfake_twin_clocked(void* st) { SPIN_RET0; }
// The same for cudaLaunchKernel, the call launch-bound jobs make most (its entry decodes the
// grid, block, stream and function arguments).
CWFAKE_EXPORT __attribute__((nocf_check)) int cwfake_launch_twin_probed(const void* f, dim3 g, dim3 b, void** args,
                                                                        size_t smem, void* st) {
  SPIN_RET0;
}
CWFAKE_EXPORT __attribute__((nocf_check)) int cwfake_launch_twin_bare(const void* f, dim3 g, dim3 b, void** args,
                                                                      size_t smem, void* st) {
  SPIN_RET0;
}
CWFAKE_EXPORT __attribute__((nocf_check)) int cwfake_launch_twin_clocked(const void* f, dim3 g, dim3 b, void** args,
                                                                         size_t smem, void* st) {
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaDeviceSynchronize(void) {
  wait_gpu();
  SPIN_RET0;
}
CWFAKE_EXPORT int cudaEventSynchronize(void* ev) { SPIN_RET0; }
CWFAKE_EXPORT int cudaGetDeviceCount(int* n) {
  *n = 1;
  return 0;
}
