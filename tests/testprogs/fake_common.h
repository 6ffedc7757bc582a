// Shared by the fake CUDA/NCCL libraries: a configurable busy-wait so traced calls have a
// known duration. Latency comes from CW_FAKE_LATENCY_NS at load, or cwfake_set_latency_ns();
// building a CUDA graph (capture end, instantiation) takes CW_FAKE_GRAPH_BUILD_NS, or
// cwfake_set_graph_build_ns(), instead: milliseconds in real life where a launch takes µs.
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define CWFAKE_EXPORT __attribute__((visibility("default"), noinline))

static inline uint64_t cwfake_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cwfake_spin_ns(uint64_t ns) {
  if (!ns) return;
  uint64_t end = cwfake_now_ns() + ns;
  while (cwfake_now_ns() < end) {
  }
}

static inline uint64_t cwfake_env_ns(const char* name) {
  const char* s = getenv(name);
  return s ? strtoull(s, 0, 10) : 0;
}
static inline uint64_t cwfake_env_latency(void) { return cwfake_env_ns("CW_FAKE_LATENCY_NS"); }
static inline uint64_t cwfake_env_graph_build(void) { return cwfake_env_ns("CW_FAKE_GRAPH_BUILD_NS"); }

// A fresh handle per captured graph / instantiated exec, so a trace can tell which exec each
// launch ran: base + 16 × n (one counter per library and kind).
static inline void* cwfake_next_handle(uint64_t* counter) {
  return (void*)__atomic_fetch_add(counter, 16, __ATOMIC_RELAXED);
}
