// A stand-in libcuda.so.1 (driver API) with the signatures causeway probes.
#include <stddef.h>
#include <stdint.h>

#include "fake_common.h"

typedef struct {
  unsigned gx, gy, gz, bx, by, bz, smem;
  void* stream;
  void* attrs;
  unsigned nattrs;
} CUlaunchConfig;

static uint64_t g_latency_ns;
static uint64_t g_graph_build_ns;
static uint64_t g_next_ptr = 0x7e0000000000ull;
static uint64_t g_next_graph = 0x5a0000000000ull;
static uint64_t g_next_exec = 0x5e0000000000ull;
__attribute__((constructor)) static void init(void) {
  g_latency_ns = cwfake_env_latency();
  g_graph_build_ns = cwfake_env_graph_build();
}
CWFAKE_EXPORT void cwfake_set_latency_ns(uint64_t ns) { g_latency_ns = ns; }
CWFAKE_EXPORT void cwfake_set_graph_build_ns(uint64_t ns) { g_graph_build_ns = ns; }

#define SPIN_RET0 \
  cwfake_spin_ns(g_latency_ns); \
  return 0

CWFAKE_EXPORT int cuInit(unsigned flags) { return 0; }
CWFAKE_EXPORT int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned smem, void* st, void** params, void** extra) {
  SPIN_RET0;
}
CWFAKE_EXPORT int cuLaunchKernelEx(const CUlaunchConfig* c, void* f, void** params, void** extra) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemAlloc_v2(uint64_t* p, size_t n) {
  cwfake_spin_ns(g_latency_ns);
  *p = __atomic_fetch_add(&g_next_ptr, (n + 0xfff) & ~0xfffull, __ATOMIC_RELAXED);
  return 0;
}
CWFAKE_EXPORT int cuMemAllocManaged(uint64_t* p, size_t n, unsigned flags) { return cuMemAlloc_v2(p, n); }
CWFAKE_EXPORT int cuMemFree_v2(uint64_t p) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpy(uint64_t d, uint64_t s, size_t n) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyAsync(uint64_t d, uint64_t s, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyHtoD_v2(uint64_t d, const void* s, size_t n) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyHtoDAsync_v2(uint64_t d, const void* s, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyDtoH_v2(void* d, uint64_t s, size_t n) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyDtoHAsync_v2(void* d, uint64_t s, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n) { SPIN_RET0; }
CWFAKE_EXPORT int cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cuCtxSynchronize(void) { SPIN_RET0; }
CWFAKE_EXPORT int cuStreamSynchronize(void* st) { SPIN_RET0; }
CWFAKE_EXPORT int cuGraphLaunch(void* exec, void* st) { SPIN_RET0; }

// Graphs: fresh handles; a null graph fails (CUDA_ERROR_INVALID_VALUE = 1), out untouched.
CWFAKE_EXPORT int cuStreamBeginCapture_v2(void* st, int mode) { SPIN_RET0; }
CWFAKE_EXPORT int cuStreamEndCapture(void* st, void** graph) {
  cwfake_spin_ns(g_graph_build_ns);
  *graph = cwfake_next_handle(&g_next_graph);
  return 0;
}
// Out of line so the entry point starts with a frame push, as real ones do (an early-return
// test first would make it a single-stepped probe).
__attribute__((noinline)) static int instantiate(void** exec, void* graph) {
  if (!graph) return 1;
  cwfake_spin_ns(g_graph_build_ns);
  *exec = cwfake_next_handle(&g_next_exec);
  return 0;
}
CWFAKE_EXPORT int cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  return instantiate(exec, graph);
}
CWFAKE_EXPORT int cuGraphExecDestroy(void* exec) {
  cwfake_spin_ns(g_latency_ns);
  return exec ? 0 : 1;
}
